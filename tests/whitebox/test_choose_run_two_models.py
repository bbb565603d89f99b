"""`realitycheck run` on an MCQ config: two tiny models, five variants, with and without BM25.

Two architectures built from a config with random weights (the fixture's
Llama and a GPT-2 on the same tokenizer), a few FACTOR and TruthfulQA-MC
questions from the shared data, five prompt variants, and a BM25 corpus
whose passages quote the questions. Every (question, variant, model) is
answered with and without retrieval; the report is written.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from realitycheck.cli import main
from realitycheck.datasets import datasets
from realitycheck.records import Response
from realitycheck.store import RunStore

torch = pytest.importorskip("torch")
QUESTIONS = 1  # answered per dataset
POOL = 4  # rows per dataset, the pool demonstrations come from
VARIANTS = [
    "default",
    "shuffle_options[seed=1]",
    "shuffle_demos[seed=2]",
    "k_shot[k=1,seed=3]",
]


@pytest.fixture(scope="module")
def tiny_gpt2_dir(tmp_path_factory, tiny_lm_dir):
    """A 2-layer GPT-2 with random weights, on the Llama fixture's tokenizer."""
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_positions=4096,  # FACTOR prefixes with two demonstrations run long
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(1)
    folder = tmp_path_factory.mktemp("tiny-gpt2")
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def short_data_dir(tmp_path_factory, data_dir):
    """The real files cut to a few rows: Expert-FACTOR's short prefixes, TruthfulQA's first."""
    import pandas as pd

    folder = tmp_path_factory.mktemp("data")
    (folder / "factor").mkdir()
    (folder / "truthfulqa").mkdir()
    table = pd.read_csv(data_dir / "factor" / "expert_factor.csv")
    short = table[table["turncated_prefixes"].str.split().str.len() < 40].head(POOL)
    short.to_csv(folder / "factor" / "expert_factor.csv", index=False)
    news = pd.read_csv(data_dir / "factor" / "news_factor.csv", nrows=POOL)  # must exist
    news.to_csv(folder / "factor" / "news_factor.csv", index=False)
    items = json.loads((data_dir / "truthfulqa" / "mc_task.json").read_text(encoding="utf-8"))
    (folder / "truthfulqa" / "mc_task.json").write_text(json.dumps(items[:POOL]), "utf-8")
    return folder


def _corpus(path, data_dir) -> dict[str, str]:
    """Write one passage per question (its first words) and an unrelated one; id -> question."""
    rows, by_id = [{"id": "other", "text": "Zebras graze on the savanna at dawn."}], {}
    for key, params in (("factor", {"part": "expert"}), ("truthfulqa_mc", {})):
        bundle = datasets.create(key, data_dir=str(data_dir), **params).load()
        for e in bundle.examples[:QUESTIONS]:
            pid = f"p{len(by_id)}"
            rows.append({"id": pid, "text": " ".join(e.question.split()[:15])})
            by_id[pid] = e.example_id
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return by_id


def test_two_models_five_variants_with_and_without_bm25(
    tiny_lm_dir, tiny_gpt2_dir, short_data_dir, tmp_path
):
    data_dir = short_data_dir
    own = _corpus(tmp_path / "passages.jsonl", data_dir)
    (tmp_path / "wordings.txt").write_text("Pick the true answer.\n", encoding="utf-8")
    all_variants = [*VARIANTS, f"instruction[file={tmp_path / 'wordings.txt'}]"]
    config = tmp_path / "mcq.toml"
    config.write_text(
        textwrap.dedent(
            f"""
            detectors = ["length"]
            reference = "gold"
            studies = ["prompt_multiplicity"]
            [run]
            out = "run"
            data_dir = "{data_dir}"
            cache_dir = "cache"
            [[datasets]]
            name = "factor"
            params = {{ part = "expert" }}
            limit = {QUESTIONS}
            [[datasets]]
            name = "truthfulqa_mc"
            limit = {QUESTIONS}
            [[backend]]
            name = "hf"
            params = {{ model = "{tiny_lm_dir}", device = "cpu" }}
            [[backend]]
            name = "hf"
            params = {{ model = "{tiny_gpt2_dir}", device = "cpu" }}
            [choice]
            template = "qa"
            shots = 2
            variants = {json.dumps(all_variants)}
            without_retrieval = true
            [choice.retriever]
            name = "bm25"
            params = {{ corpus = "passages.jsonl", k = 1, cache_dir = "idx" }}
            """
        ),
        encoding="utf-8",
    )
    assert main(["-q", "run", str(config)]) == 0
    responses = RunStore(tmp_path / "run").read(Response)
    per_answer = 2 * 2 * QUESTIONS * len(all_variants)  # models x datasets x questions x variants
    assert len(responses) == len({r.response_id for r in responses}) == 2 * per_answer
    assert {r.model for r in responses} == {str(tiny_lm_dir), str(tiny_gpt2_dir)}
    assert {r.prompt_variant for r in responses} == set(all_variants)
    with_rag = [r for r in responses if "retriever" in r.meta]
    assert len(with_rag) == per_answer
    assert all("passages" not in r.meta for r in responses if "retriever" not in r.meta)
    for r in with_rag:
        assert r.meta["retriever"].startswith("bm25[") and len(r.meta["passages"]) == 1
        assert own[r.meta["passages"][0]] == r.example_id  # its own words rank first
    cells = {(r.example_id, r.prompt_variant, r.model, "retriever" in r.meta) for r in responses}
    assert len(cells) == 2 * per_answer  # every cell once, with and without retrieval
    assert any((tmp_path / "idx").iterdir())  # the index folder is relative to the config
    report = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "truthfulqa_mc" in report and "factor" in report
    _assert_prompt_multiplicity_reported(tmp_path / "run", report)


TABLES = {
    "multiplicity",
    "questions",
    "detector_means",
    "detector_tests",
    "transitions",
    "retrieval_ambiguity",
}


def _assert_prompt_multiplicity_reported(run, report: str) -> None:
    """Every table and figure of the study is stored and shown in the report's study section."""
    (folder,) = (run / "studies").glob("prompt_multiplicity*")
    assert {p.stem for p in folder.glob("*.csv")} == TABLES
    stems = {p.stem.split("_")[0] for p in folder.glob("*.png")}
    assert stems == {"taxonomy", "accuracy", "flow"}
    assert len(list(folder.glob("*.png"))) == 3 * 2  # each figure per dataset
    start = report.index('id="study-prompt-multiplicity')
    section = report[start : report.index("<h2", start)]  # up to the next part
    assert section.count("<table") == len(TABLES)
    assert section.count("<figure") == 3 * 2
