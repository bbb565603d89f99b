"""realitycheck vs the ``selfcheckgpt`` package 0.1.7: SelfCheck n-gram, BERTScore, NLI, prompt.

Both tools score the same responses against the same samples, with the same
tiny local models, and the script prints, per variant, how many responses'
values differ between the two tools and each tool's wall and CPU seconds,
with the ratio package / realitycheck. Each tool runs in its own fresh
process per round; the rounds are interleaved (``--rounds``, default 3: ours
then the package, then the package then ours, ...) after an untimed
warm-up of both on two responses, and every figure is a median
(``benchmarks/_results.py``; the load is stated).

The four variants and what is held equal:

* **n-gram** (unigram, no model): ``SelfCheckNgram(n=1)``'s document-level
  ``avg_neg_logprob`` and ``avg_max_neg_logprob`` against ``selfcheck_ngram``
  with ``statistic="avg"`` and ``"max"``. The package builds a spaCy
  pipeline for every response (its ``UnigramModel`` loads one per instance);
  that, not the counting, is most of its time here, and it would be more
  with ``en_core_web_sm``.
* **BERTScore**: ``SelfCheckBERTScore(rescale_with_baseline=False)``, whose
  ``bert_score.score`` call is pointed at a tiny BERT folder
  (``model_type=FOLDER, num_layers=2``; the package takes no model argument,
  only a language, so ``bert_score.score`` is wrapped with those two
  arguments), against ``selfcheck_bertscore[model=FOLDER,layer=2]``. The
  package calls ``bert_score.score`` once per sample, which loads the model
  each time: that is its cost as shipped.
* **NLI**: ``SelfCheckNLI(nli_model=FOLDER)`` against ``selfcheck_nli`` over
  the ``hf`` backend's ``pairs`` capability with ``premise=sentence`` (the
  package encodes ``(sentence, sample)``). The folder is a tiny BERT
  classifier with two labels, ``ENTAILMENT`` and ``CONTRADICTION`` in that
  order (the package's model has its neutral class removed and reads
  output 1 as contradiction). The package loads it with the DeBERTa-v2
  classes, which need a DeBERTa folder: they are replaced by the ``Auto``
  classes in its module (with ``batch_encode_plus``, which the package calls
  and transformers 5 no longer has, as a call of the tokenizer on the pair).
  It scores one pair per forward pass; the backend batches.
* **prompt**: ``SelfCheckLLMPrompt(model=FOLDER)`` (it takes a local
  model) with its template replaced by realitycheck's
  ``selfcheck_prompt.v1.txt``, against ``selfcheck_prompt[unclear_as=0.5]``
  (the paper's score for a reply that is neither, which the package gives)
  over the ``hf`` backend on the same tiny Llama, both greedy with 5 new
  tokens. The package generates one prompt at a time; the backend batches.
  The Llama is :func:`_tiny_llama.build_yes_no_llama`: its tokenizer
  decodes every prompt back to itself (the package finds its reply by
  removing the prompt from the decoded text; a tokenizer that decodes
  ``"\n\n"`` as a space leaves the prompt in, and every reply reads as
  neither), and it answers each prompt ``Yes`` or ``No`` and stops, about
  half of each, so both tools read their replies and the values vary. The
  note gives how many replies each tool read as Yes or No.

Sentences and tokens: the package takes the response's sentences from the
caller (they are realitycheck's :func:`~realitycheck.text.split_sentences`
here, the same for both), splits samples into sentences and sentences into
tokens with spaCy's ``en_core_web_sm``, which cannot be downloaded here:
``spacy.load`` is replaced by a blank English pipeline with the rule-based
``sentencizer``. spaCy's and realitycheck's splitters do not always agree:
spaCy's English tokenizer keeps a single letter with its full stop as one
token (``"a."``, an abbreviation rule), where realitycheck's n-gram tokens
are ``"a"`` and ``"."``, so a sentence ending in "a" changes the package's
unigram counts. The inputs (lowercase vocabulary words, one full stop per
sentence, at least four words per sentence, which the package's BERTScore
variant requires) therefore never end a sentence with "a", and the script
checks rather than assumes that the splitters agree on them: the package's
worker returns spaCy's sentences and tokens, and the note gives how many
responses split identically. It also counts the responses whose tokens
differ on ``--responses`` x ``--samples`` inputs that may end a sentence with
"a" (the disagreement the n-gram values would show there).

Each tool runs with ``--threads`` torch threads (default 1, as on a shared
machine several OpenMP threads stall); the timed part of each variant starts
after the imports (transformers' BERT and Llama classes are imported first
in both) and includes loading the models; its CPU seconds are the process's
(every thread) over the same span.

Run from the repository root::

    .venv/bin/python benchmarks/selfcheck_vs_package.py --responses 20 --samples 5 --rounds 3

The package's virtual environment is ``benchmarks/.venv-selfcheck``
(git-ignored); the script creates it when missing with
``pip install -c constraints.txt selfcheckgpt==0.1.7 bert-score==0.3.13``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / "benchmarks" / ".venv-selfcheck"
PACKAGE_PYTHON = VENV / "bin" / "python"
PACKAGES = ["selfcheckgpt==0.1.7", "bert-score==0.3.13"]
LAYER = 2
MAX_TOKENS = 5
VARIANTS = ("ngram_avg", "ngram_max", "bertscore", "nli", "prompt")
TOLERANCE = {"ngram_avg": 1e-9, "ngram_max": 1e-9, "bertscore": 1e-5, "nli": 1e-5, "prompt": 0.0}
"""How closely the two tools' values must agree: float32 models leave rounding error."""
WORDS = (
    "the a cat dog bird fish horse city river mountain king queen doctor teacher "
    "paris london rome berlin tokyo madrid red blue green black white small large old new "
    "is was are were has had sat ran flew swam lives lived sees saw likes liked "
    "on in at near under over with without from to of and or but not"
).split()


def cpu_seconds() -> float:
    """User + system CPU seconds of this process (every thread) and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn: Callable[[], Any]) -> tuple[dict[str, float], Any]:
    """Call ``fn``; return ``{"seconds", "cpu"}`` of the call and its value."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    value = fn()
    return {"seconds": time.perf_counter() - wall, "cpu": cpu_seconds() - cpu}, value


def ensure_venv() -> None:
    """Create the package's virtual environment unless it is there."""
    if PACKAGE_PYTHON.exists():
        return
    print(f"creating {VENV} (once) ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "pip"), "install", "-q", "-c", str(REPO / "constraints.txt")]
    subprocess.run([*pip, *PACKAGES], check=True)


def make_inputs(n: int, k: int, seed: int, *, final_a: bool = False) -> list[dict[str, Any]]:
    """Return ``n`` responses of three sentences, each with ``k`` samples.

    A sample repeats each response sentence with probability one half and
    adds one or two sentences of its own. Unless ``final_a``, no sentence
    ends with "a" (spaCy keeps "a." as one token; see the module docstring).
    """
    import numpy as np

    from realitycheck.text import split_sentences

    rng = np.random.default_rng(seed)

    def sentence() -> str:
        words = list(rng.choice(WORDS, size=int(rng.integers(4, 10))))
        while not final_a and words[-1] == "a":
            words[-1] = str(rng.choice(WORDS))
        return " ".join(words) + "."

    out = []
    for _ in range(n):
        own = [sentence() for _ in range(3)]
        samples = []
        for _ in range(k):
            kept = [s for s in own if rng.random() < 0.5]
            samples.append(" ".join(kept + [sentence() for _ in range(int(rng.integers(1, 3)))]))
        text = " ".join(own)
        out.append({"text": text, "sentences": split_sentences(text), "samples": samples})
    return out


def our_splits(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """realitycheck's side of :func:`spacy_splits`: the n-gram tokens and sample sentences."""
    from realitycheck.detectors.selfcheck import ngram_tokens
    from realitycheck.text import split_sentences

    return [
        {
            "tokens": [t for text in [*x["sentences"], *x["samples"]] for t in ngram_tokens(text)],
            "sample_sentences": [split_sentences(sample) for sample in x["samples"]],
        }
        for x in inputs
    ]


def spacy_splits(nlp: Any, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tokens the package's unigram model counts, and its samples' sentences, per response.

    As ``UnigramModel.add`` reads a text: its sentences, each one's tokens,
    lowercased; the response and then each sample. As ``SelfCheckBERTScore``
    splits a sample: spaCy's sentences, stripped.
    """

    def tokens(text: str) -> list[str]:
        sentences = [s.text.strip() for s in nlp(text).sents]
        return [t.text.lower() for s in sentences for t in nlp(s)]

    return [
        {
            "tokens": [t for text in [x["text"], *x["samples"]] for t in tokens(text)],
            "sample_sentences": [
                [s.text.strip() for s in nlp(sample).sents] for sample in x["samples"]
            ],
        }
        for x in inputs
    ]


def build_bert(folder: Path) -> None:
    """Write a tiny BERT (3 layers, random weights, seed 0) and its word-piece vocabulary."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    (folder / "vocab.txt").write_text("\n".join(specials + ["."] + sorted(set(WORDS))) + "\n")
    tokenizer = BertTokenizer(str(folder / "vocab.txt"), model_max_length=128)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    BertModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_nli(bert: Path, folder: Path) -> None:
    """Write a tiny 2-label (ENTAILMENT, CONTRADICTION) BERT classifier on ``bert``'s vocabulary."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(bert)
    labels = {0: "ENTAILMENT", 1: "CONTRADICTION"}
    config = BertConfig.from_pretrained(
        bert, num_labels=2, id2label=labels, label2id={v: k for k, v in labels.items()}
    )
    config.initializer_range = 0.5  # spread the logits so that the values differ
    torch.manual_seed(1)
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def prompt_template() -> str:
    """Return realitycheck's SelfCheck prompt in the package's ``{context}``/``{sentence}`` form."""
    from realitycheck.detectors._backend_calls import load_prompt
    from realitycheck.detectors.selfcheck import PROMPT

    return (
        load_prompt(PROMPT)
        .template.replace("$sample", "{context}")
        .replace("$sentence", "{sentence}")
    )


def preload() -> None:
    """Import the model classes both tools use, so that no timing includes an import."""
    from transformers import (  # noqa: F401
        AutoConfig,
        AutoModel,
        AutoModelForCausalLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
        BertForSequenceClassification,
        BertModel,
        BertTokenizer,
        BertTokenizerFast,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
    )


def package_worker(cfg: dict[str, Any]) -> dict[str, Any]:
    """Run the selfcheckgpt package (in its own virtual environment)."""
    import functools

    import spacy
    import torch

    def blank(*args: Any, **kwargs: Any) -> Any:
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        return nlp

    spacy.load = blank  # en_core_web_sm cannot be downloaded here
    torch.set_num_threads(cfg["threads"])
    preload()
    import bert_score
    import selfcheckgpt.modeling_selfcheck as package
    from selfcheckgpt.modeling_selfcheck import (
        SelfCheckBERTScore,
        SelfCheckLLMPrompt,
        SelfCheckNgram,
        SelfCheckNLI,
    )
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    class PairTokenizer:
        """AutoTokenizer plus the ``batch_encode_plus`` the package calls (gone in v5)."""

        @staticmethod
        def from_pretrained(folder: str) -> Any:
            tokenizer = AutoTokenizer.from_pretrained(folder)

            def batch_encode_plus(batch_text_or_text_pairs: Any, **kwargs: Any) -> Any:
                firsts, seconds = zip(*batch_text_or_text_pairs, strict=True)
                return tokenizer(list(firsts), list(seconds), **kwargs)

            tokenizer.batch_encode_plus = batch_encode_plus
            return tokenizer

    # The tiny classifier is a BERT, not a DeBERTa-v2 with its sentencepiece vocabulary.
    package.DebertaV2Tokenizer = PairTokenizer
    package.DebertaV2ForSequenceClassification = AutoModelForSequenceClassification

    bert_score.score = functools.partial(
        bert_score.score, model_type=cfg["bert"], num_layers=cfg["layer"]
    )
    inputs = cfg["inputs"]
    out: dict[str, Any] = {}

    def ngram() -> list[dict[str, float]]:
        checker = SelfCheckNgram(n=1)
        return [
            checker.predict(x["sentences"], x["text"], x["samples"])["doc_level"] for x in inputs
        ]

    took, docs = timed(ngram)
    out["ngram_avg"] = {"values": [d["avg_neg_logprob"] for d in docs], **took}
    out["ngram_max"] = {"values": [d["avg_max_neg_logprob"] for d in docs], **took}

    def bertscore() -> list[float]:
        checker = SelfCheckBERTScore(rescale_with_baseline=False)
        return [float(checker.predict(x["sentences"], x["samples"]).mean()) for x in inputs]

    took, values = timed(bertscore)
    out["bertscore"] = {"values": values, **took}

    def nli() -> list[float]:
        checker = SelfCheckNLI(nli_model=cfg["nli"], device=torch.device("cpu"))
        return [float(checker.predict(x["sentences"], x["samples"]).mean()) for x in inputs]

    took, values = timed(nli)
    out["nli"] = {"values": values, **took}
    readings: dict[str, int] = {"yes": 0, "no": 0, "neither": 0}

    def prompt() -> list[float]:
        checker = SelfCheckLLMPrompt(model=cfg["llama"], device=torch.device("cpu"))
        checker.set_prompt_template(cfg["template"])
        read = checker.text_postprocessing

        def counted(text: str) -> float:
            value = read(text)
            readings[{0.0: "yes", 1.0: "no"}.get(value, "neither")] += 1
            return value

        checker.text_postprocessing = counted
        return [float(checker.predict(x["sentences"], x["samples"]).mean()) for x in inputs]

    took, values = timed(prompt)
    out["prompt"] = {"values": values, "readings": readings, **took}
    nlp = blank()
    out["splits"] = spacy_splits(nlp, inputs)
    out["probe_splits"] = spacy_splits(nlp, cfg["probe"])
    return out


def realitycheck_worker(cfg: dict[str, Any]) -> dict[str, Any]:
    """Run realitycheck's detectors on the same inputs."""
    import torch

    preload()

    from realitycheck import Needs, Response
    from realitycheck.backends.hf import HFBackend
    from realitycheck.detectors.selfcheck import SelfCheckBERTScore, SelfCheckNgram, SelfCheckPrompt
    from realitycheck.detectors.selfcheck_nli import SelfCheckNLI

    torch.set_num_threads(cfg["threads"])
    responses = [
        Response(
            response_id=str(i),
            example_id=str(i),
            model="m",
            text=x["text"],
            samples=tuple(x["samples"]),
        )
        for i, x in enumerate(cfg["inputs"])
    ]
    out: dict[str, Any] = {}
    detectors = {
        "ngram_avg": lambda: SelfCheckNgram(statistic="avg"),
        "ngram_max": lambda: SelfCheckNgram(statistic="max"),
        "bertscore": lambda: SelfCheckBERTScore(
            model=cfg["bert"], layer=cfg["layer"], device="cpu"
        ),
        "nli": lambda: SelfCheckNLI(
            judge=HFBackend(model=cfg["nli"], device="cpu"), premise="sentence"
        ),
        "prompt": lambda: SelfCheckPrompt(
            judge=HFBackend(model=cfg["llama"], device="cpu"),
            max_tokens=MAX_TOKENS,
            unclear_as=0.5,
        ),
    }
    for name, make in detectors.items():
        took, scores = timed(lambda make=make: make().score(responses, Needs()))
        out[name] = {
            "values": [s.value for s in scores],
            "errors": [s.error for s in scores if s.error],
            "unreadable": sum(s.unreadable for s in scores),
            **took,
        }
    return out


def run_worker(python: Path, role: str, config: Path, src: Path) -> dict[str, Any]:
    """Run this file as ``role`` worker under ``python`` and return what it printed.

    ``src`` (the folder the benchmark imports realitycheck from) is the worker's ``PYTHONPATH``.
    """
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    env["PYTHONPATH"] = str(src)
    done = subprocess.run(
        [str(python), __file__, "--worker", role, str(config)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the {role} worker failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def rows_of(
    ours: list[dict[str, Any]],
    theirs: list[dict[str, Any]],
    loads: list[float],
    inputs: list[dict[str, Any]],
    probe: list[dict[str, Any]],
    n_samples: int,
) -> list[dict[str, str]]:
    """One row per variant: medians, ratio, agreement of values (and of splits, for n-grams)."""
    from _results import Rounds, Timing, compare_exact, compare_values, report

    splits = report(
        compare_exact(
            [s["tokens"] for s in our_splits(inputs)],
            [s["tokens"] for s in theirs[-1]["splits"]],
            what="n-gram tokens (response and samples) of responses",
        ),
        compare_exact(
            [s["sample_sentences"] for s in our_splits(inputs)],
            [s["sample_sentences"] for s in theirs[-1]["splits"]],
            what="sample sentences of responses",
        ),
    )
    off = compare_exact(
        [s["tokens"] for s in our_splits(probe)],
        [s["tokens"] for s in theirs[-1]["probe_splits"]],
        what="",
    )
    probed = (
        f"where a sentence may end in 'a' (same generator otherwise), spaCy's tokens differ "
        f"on {off.n_differ} of {off.n} responses"
    )
    print(f"  {probed}")
    n_pairs = len(inputs) * n_samples
    rows = []
    for name in VARIANTS:
        timed = Rounds(
            {
                tool: [Timing(run[name]["seconds"], run[name]["cpu"]) for run in runs]
                for tool, runs in (("realitycheck", ours), ("package", theirs))
            },
            loads,
        )
        values = compare_values(
            ours[-1][name]["values"],
            theirs[-1][name]["values"],
            tol=TOLERANCE[name],
            what="values of responses",
        )
        notes = [timed.note("package", "realitycheck"), report(values)]
        if name.startswith("ngram"):
            notes += [splits, probed]
        if name == "prompt":
            read = theirs[-1]["prompt"]["readings"]
            replies = sum(read.values())
            mine = replies - ours[-1]["prompt"]["unreadable"]
            distinct = len({round(v, 9) for v in ours[-1]["prompt"]["values"]})
            notes.append(
                f"replies read as Yes or No: package {read['yes'] + read['no']} of {replies} "
                f"({read['yes']} Yes), realitycheck {mine} of {replies}; {distinct} distinct "
                "response values"
            )
        if ours[-1][name]["errors"]:
            notes.append(f"realitycheck errors: {ours[-1][name]['errors'][:2]}")
        print(
            f"{name:<10} realitycheck {timed.seconds_text('realitycheck', 3)}, package "
            f"{timed.seconds_text('package')}: {timed.ratio_text('package', 'realitycheck')}"
        )
        rows.append(
            {
                "work": f"SelfCheckGPT {name}, {len(inputs)} responses x {n_samples} samples "
                f"({n_pairs} pairs), tiny models",
                "realitycheck": timed.seconds_text("realitycheck", 3),
                "alternative": f"selfcheckgpt 0.1.7 {timed.seconds_text('package')}",
                "ratio": timed.ratio_text("package", "realitycheck"),
                "note": "; ".join(notes),
            }
        )
    return rows


def main() -> None:
    """Build the inputs and models, run both tools in rounds, print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=20)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--package-python",
        type=Path,
        default=None,
        help="an interpreter that has selfcheckgpt 0.1.7 (default: the venv made here)",
    )
    parser.add_argument("--worker", nargs=2, metavar=("ROLE", "CONFIG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        role, path = args.worker
        cfg = json.loads(Path(path).read_text())
        result = package_worker(cfg) if role == "package" else realitycheck_worker(cfg)
        print(json.dumps(result))
        return
    sys.path.insert(0, str(REPO / "benchmarks"))
    from _results import SRC, Timing, interleave, load_average, write_result
    from _tiny_llama import build_yes_no_llama

    package_python = args.package_python or PACKAGE_PYTHON
    if args.package_python is None:
        ensure_venv()
    inputs = make_inputs(args.responses, args.samples, args.seed)
    probe = make_inputs(args.responses, args.samples, args.seed + 1, final_a=True)
    template = prompt_template()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_bert(root / "bert")
        build_nli(root / "bert", root / "nli")
        prompts = [
            template.format(context=sample, sentence=sentence)
            for x in inputs
            for sentence in x["sentences"]
            for sample in x["samples"]
        ]
        build_yes_no_llama(root / "llama", prompts)
        cfg = {
            "inputs": inputs,
            "probe": probe,
            "bert": str(root / "bert"),
            "llama": str(root / "llama"),
            "nli": str(root / "nli"),
            "layer": LAYER,
            "template": template,
            "threads": args.threads,
        }
        config, warm = root / "config.json", root / "warm.json"
        config.write_text(json.dumps(cfg))
        warm.write_text(json.dumps({**cfg, "inputs": inputs[:2], "probe": probe[:2]}))
        tools = {"realitycheck": Path(sys.executable), "package": package_python}
        for role, python in tools.items():  # untimed: bytecode caches, files read once
            run_worker(python, role, warm, SRC)
        runs: dict[str, list[dict[str, Any]]] = {role: [] for role in tools}

        def side(role: str) -> Callable[[], Timing]:
            def run() -> Timing:  # each variant is timed inside the worker: kept in runs
                runs[role].append(run_worker(tools[role], role, config, SRC))
                return Timing(0.0, 0.0)

            return run

        rounds = interleave({role: side(role) for role in tools}, args.rounds, warmup=0)
    print(
        f"{args.responses} responses x {args.samples} samples, 3 sentences each, "
        f"{args.threads} torch thread(s), {args.rounds} interleaved rounds; "
        "ratio = selfcheckgpt 0.1.7 / realitycheck"
    )
    loads = [*rounds.loads, load_average()]
    rows = rows_of(runs["realitycheck"], runs["package"], loads, inputs, probe, args.samples)
    command = shlex.join(["python", "benchmarks/selfcheck_vs_package.py", *sys.argv[1:]])
    write_result("selfcheck_vs_package", rows, command)


if __name__ == "__main__":
    main()
