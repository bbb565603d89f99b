"""The table of every data file: local path, source repository, commit, path and SHA-256.

Taken from ``SOURCES.tsv`` and ``SHA256SUMS`` of the shared data folder; a test
checks each digest against the files themselves.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

__all__ = ["COMMITS", "DEFAULT_BASE_URL", "SOURCES", "UNPINNED", "Source"]

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"

COMMITS: dict[str, str] = {
    "vectara/FaithJudge": "ca35eb45d0d32cffd5ddc2d6513c4e8342cb9f5d",
    "vectara/FaithBench": "cf89797d82812c23b5d5e5c121f1d9b8983bbbce",
    "RUCAIBox/HaluEval": "b7253db3cdaa0ab2c382f92b26b390109174f77e",
    "koppula/TruthfulQA": "4dee2311b23de20b43bfc12ace7037f3f71ba421",
    "google-research-datasets/natural-questions": "fb26a3073b1fe636c97302890a27b491d6530130",
    "google/BEGIN-dataset": "6e65f0d5a1ed1b9574643a7640ff1678d4e979b5",
    "AI21Labs/factor": "ee9de30abf28e94b163167dc41ad51fbbdb48c32",
    "McGill-NLP/FaithDial": "25671c6e3aa7d667943b7744a2b91507e7187f83",
}
"""The commit every file of a repository is taken from."""


@dataclass(frozen=True)
class Source:
    """One data file: where it lies locally and where it comes from.

    Attributes:
        local: Path under the data root.
        repo: ``owner/name`` of the public repository.
        path: Path inside that repository.
        sha256: Hex digest of the file's bytes.
    """

    local: str
    repo: str
    path: str
    sha256: str

    @property
    def commit(self) -> str:
        """The full commit the file is taken from."""
        return COMMITS[self.repo]

    def url(self, base_url: str = DEFAULT_BASE_URL) -> str:
        """Return the download address of the file under ``base_url``."""
        quoted = urllib.parse.quote(self.path)
        return f"{base_url.rstrip('/')}/{self.repo}/{self.commit}/{quoted}"


SOURCES: tuple[Source, ...] = (
    Source(
        "ragtruth/qa.jsonl",
        "vectara/FaithJudge",
        "eval_data/ragtruth_qa.jsonl",
        "72db1847b6f5102102d55ed8094c14abcfeeebeca37bbee8ed72d1e0041c6b62",
    ),
    Source(
        "ragtruth/summary.jsonl",
        "vectara/FaithJudge",
        "eval_data/ragtruth_summary.jsonl",
        "18b34dfba2df8218dc2fe3f04296d9be136203f3f18a5bed23272f4d3ccd44ac",
    ),
    Source(
        "ragtruth/data2txt.jsonl",
        "vectara/FaithJudge",
        "eval_data/ragtruth_data2txt.jsonl",
        "85a791ea9b9eb85294fb68c148dc35488fdbde8a47adaa7ddd53afa41f44d75b",
    ),
    Source(
        "faithbench/faithjudge_summary.jsonl",
        "vectara/FaithJudge",
        "eval_data/faithbench_summary.jsonl",
        "fc3060e138fcc9b43b0d800c5e3f765c8e68065e6e81488a4c8096a188c45bbc",
    ),
    Source(
        "faithbench/FaithBench.csv",
        "vectara/FaithBench",
        "FaithBench.csv",
        "b64595319c5a0673c7af00a12c9340a79aeb3437c021b097745413da42d80a09",
    ),
    Source(
        "faithbench/release/batch_1.json",
        "vectara/FaithBench",
        "data_for_release/batch_1.json",
        "a4e7858702e741b0fb024a022a906f61fb8eb65011b7f7b138e56e080a4c8c59",
    ),
    Source(
        "faithbench/release/batch_2.json",
        "vectara/FaithBench",
        "data_for_release/batch_2.json",
        "18f1b2b9eae6fbf2020f295dc5ca512ef1a7e389e763b707bc51831f58df6a70",
    ),
    Source(
        "faithbench/release/batch_3.json",
        "vectara/FaithBench",
        "data_for_release/batch_3.json",
        "84b709a9d88998f478f429ee2330ea18666ae9e5340ea398ece03cec6ab54308",
    ),
    Source(
        "faithbench/release/batch_4.json",
        "vectara/FaithBench",
        "data_for_release/batch_4.json",
        "c0f68bc222dd8b6e332cb6668840de8da150687ddf6f9b5bd243f389033fda42",
    ),
    Source(
        "faithbench/release/batch_5.json",
        "vectara/FaithBench",
        "data_for_release/batch_5.json",
        "6be08bb37ccdf68e41e117b0174cc3c8b41ed7bf85134d00e0e89c023e96b436",
    ),
    Source(
        "faithbench/release/batch_6.json",
        "vectara/FaithBench",
        "data_for_release/batch_6.json",
        "a5fd42aa64fbe15f535192ddfd3cfc72b53535cde7834cb6685ebe0a229f8587",
    ),
    Source(
        "faithbench/release/batch_7.json",
        "vectara/FaithBench",
        "data_for_release/batch_7.json",
        "28e83e1487381ce317103505dab4d5679ad74f53541374a98e24e3673734343b",
    ),
    Source(
        "faithbench/release/batch_8.json",
        "vectara/FaithBench",
        "data_for_release/batch_8.json",
        "5cf2b8ab42fe1d4b0018cf736448dd8a88318267b0efc2f45ea200e713932975",
    ),
    Source(
        "faithbench/release/batch_9.json",
        "vectara/FaithBench",
        "data_for_release/batch_9.json",
        "4924fe2d0975890712032a128544c0619c2ebf81d5d472e99e7883f1a9720bd5",
    ),
    Source(
        "faithbench/release/batch_10.json",
        "vectara/FaithBench",
        "data_for_release/batch_10.json",
        "8e5cec822516abbf74cd6796104bbe537da98628c671b64c10afa3b15bebe08c",
    ),
    Source(
        "faithbench/release/batch_11.json",
        "vectara/FaithBench",
        "data_for_release/batch_11.json",
        "cf999c8fa9696f4b24d8f4b08f9fdd6603a942cfee63ad851ff6d1f265c116cc",
    ),
    Source(
        "faithbench/release/batch_12.json",
        "vectara/FaithBench",
        "data_for_release/batch_12.json",
        "fda9f0e0eae69c13b79a8fc1f81d1f8a02e9f28ad8c3274619c4369bb15c818e",
    ),
    Source(
        "faithbench/release/batch_14.json",
        "vectara/FaithBench",
        "data_for_release/batch_14.json",
        "72f07b9f4b91f8a49d96e7adc79a8308edb92a2e6b34babcd9ef68dc6b7b2f34",
    ),
    Source(
        "faithbench/release/batch_15.json",
        "vectara/FaithBench",
        "data_for_release/batch_15.json",
        "c6608ce2edd17134674c7f8a0fdfc871e22458b432b35506889886c737eb4663",
    ),
    Source(
        "faithbench/release/batch_16.json",
        "vectara/FaithBench",
        "data_for_release/batch_16.json",
        "e35ace1069bb79844b122415d3c4192f7147737a2b9ad509185fb2c1ba7090db",
    ),
    Source(
        "halueval/general_data.json",
        "RUCAIBox/HaluEval",
        "data/general_data.json",
        "73302cd97666b808fb94b5d8a4a2c924049c9484e609017a2f808c4a6d539219",
    ),
    Source(
        "truthfulqa/TruthfulQA.csv",
        "koppula/TruthfulQA",
        "data/v0/TruthfulQA.csv",
        "8d7dd15f033196140f032d97d30f037da7a7b1192c3f36f9937c1850925335a2",
    ),
    Source(
        "truthfulqa/finetune_truth.jsonl",
        "koppula/TruthfulQA",
        "data/finetune_truth.jsonl",
        "8e81d9f0dc592e26fb0d37106126e489d39ac75099828b1f2c8142f3ede60c6b",
    ),
    Source(
        "truthfulqa/finetune_info.jsonl",
        "koppula/TruthfulQA",
        "data/finetune_info.jsonl",
        "b8e00e379f3aefcdb01b93886e67e0991ca90b5fdd389c0be4be2f5f00c07ec3",
    ),
    Source(
        "truthfulqa/mc_task.json",
        "koppula/TruthfulQA",
        "data/v0/mc_task.json",
        "6eb4125d25750c0145c4be2dce00440736684ab6f74ce6bff2139571cc758954",
    ),
    Source(
        "nq_open/NQ-open.dev.jsonl",
        "google-research-datasets/natural-questions",
        "nq_open/NQ-open.dev.jsonl",
        "f15567f38099f3615f5b8a685c0aef449c11ad90d3da3735e8d1b98115b40616",
    ),
    Source(
        "begin/begin_test_wow.tsv",
        "google/BEGIN-dataset",
        "wow/begin_test_wow.tsv",
        "d5c106a42042c3abd481563f1157e07c95c107dbcdf67f23564d874e8a4d6e7e",
    ),
    Source(
        "begin/begin_dev_wow.tsv",
        "google/BEGIN-dataset",
        "wow/begin_dev_wow.tsv",
        "2ebfc95a1ff267e12dcce3250da4d158e1811c62e9e1a0d56f110efc9ace0178",
    ),
    Source(
        "begin/begin_dev_cmu.tsv",
        "google/BEGIN-dataset",
        "cmu-dog/begin_dev_cmu.tsv",
        "9482294df23cf08a976773ca73203b84f7178534ecab1a206eaade365e97071c",
    ),
    Source(
        "begin/topicalchat_begin_dev_tc.tsv",
        "google/BEGIN-dataset",
        "topicalchat/begin_dev_tc.tsv",
        "d799a8cb3635de41b7f284dcfc872544ddeadcbae0c2ffd684270cce671f7711",
    ),
    Source(
        "factor/news_factor.csv",
        "AI21Labs/factor",
        "data/news_factor.csv",
        "f4f3110a66bfca3a1decb88f14ce55b4e9656be80894bcd94216cc2c61be8260",
    ),
    Source(
        "factor/expert_factor.csv",
        "AI21Labs/factor",
        "data/expert_factor.csv",
        "39cbceba9b43e713069a155e2028f6a2335b792983110b935a71ddb065766bde",
    ),
    Source(
        "faithdial/CTRL/ctrl_processed_cmu.csv",
        "McGill-NLP/FaithDial",
        "data-audit/CTRL/ctrl_processed_cmu.csv",
        "fdf6b4fd326cc9c0b7222f4a2c3a6a7b8943ec4feda195adc727b86e11a86664",
    ),
    Source(
        "faithdial/CTRL/ctrl_processed_topicalchat.csv",
        "McGill-NLP/FaithDial",
        "data-audit/CTRL/ctrl_processed_topicalchat.csv",
        "b6c6ed1c3bfeb2578dab05ab694482047119b16ff0e3350b88f6a2f86605b201",
    ),
    Source(
        "faithdial/CTRL/ctrl_processed_wow.csv",
        "McGill-NLP/FaithDial",
        "data-audit/CTRL/ctrl_processed_wow.csv",
        "a547b236b5ab7bd64a93fe6aeb6e2886bd2239e370538563abdd3667c92b5700",
    ),
    Source(
        "faithdial/DoHA/doha_processed_cmu.csv",
        "McGill-NLP/FaithDial",
        "data-audit/DoHA/doha_processed_cmu.csv",
        "20f4e75021bd18f03fb3acc073acf90cde47250b6177ae2cdb1bef17604f2e77",
    ),
    Source(
        "faithdial/DoHA/doha_processed_topical.csv",
        "McGill-NLP/FaithDial",
        "data-audit/DoHA/doha_processed_topical.csv",
        "ac2f9a6edb1514b18ce034f1b3ea0f4e68f765cbde4d87f0b6c7ebdd6b5c44b6",
    ),
    Source(
        "faithdial/DoHA/doha_processed_wow.csv",
        "McGill-NLP/FaithDial",
        "data-audit/DoHA/doha_processed_wow.csv",
        "45fd23f61e77735169cf693dd7f4eabc0c07c0a855433584f88cd0f85e801929",
    ),
    Source(
        "faithdial/GPT2/gpt2_processed_cmu.csv",
        "McGill-NLP/FaithDial",
        "data-audit/GPT2/gpt2_processed_cmu.csv",
        "a74c0a9ebfa1603a293b7ffae27b6498fd8f112079c5830b0ac7d48a59c3e5b6",
    ),
    Source(
        "faithdial/GPT2/gpt2_processed_topical.csv",
        "McGill-NLP/FaithDial",
        "data-audit/GPT2/gpt2_processed_topical.csv",
        "7d13fa3258783f76f63963e9aab0a2dc5668003d74b246a8fbda6da6f7be7255",
    ),
    Source(
        "faithdial/GPT2/gpt2_processed_wow.csv",
        "McGill-NLP/FaithDial",
        "data-audit/GPT2/gpt2_processed_wow.csv",
        "a74dcc1b8427fb91ce1b173b2ce98a6ed06560299dd9db544e8976d3b6237987",
    ),
    Source(
        "faithdial/gold/cmu.csv",
        "McGill-NLP/FaithDial",
        "data-audit/gold/cmu.csv",
        "91aff154c342c1a9c4c74c24c6ef067efca17719e64aa0969419fdbb8d57c9cb",
    ),
    Source(
        "faithdial/gold/topical.csv",
        "McGill-NLP/FaithDial",
        "data-audit/gold/topical.csv",
        "4bd585d91e2c2e591220d3167fe6e1806c335d8870414833f32a0fd564f9fdec",
    ),
    Source(
        "faithdial/gold/wow.csv",
        "McGill-NLP/FaithDial",
        "data-audit/gold/wow.csv",
        "0237ccc1472e9426e3e6631bb3cb8dbbbc7c7083190f633a7db81672992127aa",
    ),
)
"""Every data file the built-in datasets read (and a few more in the shared data folder)."""

UNPINNED: tuple[Source, ...] = (
    Source("halueval/qa_data.json", "RUCAIBox/HaluEval", "data/qa_data.json", ""),
    Source("halueval/dialogue_data.json", "RUCAIBox/HaluEval", "data/dialogue_data.json", ""),
    Source(
        "halueval/summarization_data.json", "RUCAIBox/HaluEval", "data/summarization_data.json", ""
    ),
)
"""Files of the same pinned commits whose SHA-256 is not recorded here yet.

They are not in the shared data folder, so their digests could not be taken.
``datasets fetch --trust-unpinned`` downloads one, records its digest beside
it (``<file>.sha256``) and checks every later fetch against that record.
"""
