"""realitycheck vs the ``selfcheckgpt`` package 0.1.7: SelfCheck n-gram, BERTScore, NLI, prompt.

Both tools score the same responses against the same samples, with the same
tiny local models, and the script prints, per variant, the largest difference
between the two tools' values and the throughput of each in samples per
second (responses x samples / wall time), with the ratio realitycheck /
package.

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
  ``selfcheck_prompt.v1.txt``, against ``selfcheck_prompt`` over the ``hf``
  backend on the same tiny Llama, both greedy with 5 new tokens. The package
  generates one prompt at a time; the backend batches. With random weights
  most replies are neither yes nor no (0.5 in both tools).

Sentences: the package takes the response's sentences from the caller (they
are realitycheck's :func:`~realitycheck.text.split_sentences` here, the same
for both) and splits samples with spaCy's ``en_core_web_sm``, which cannot be
downloaded here: ``spacy.load`` is replaced by a blank English pipeline with
the rule-based ``sentencizer``. The inputs are made so that every splitter
agrees (lowercase vocabulary words, one full stop per sentence, at least four
words per sentence, which the package's BERTScore variant requires).

Each tool runs in its own fresh process with ``--threads`` torch threads
(default 1, as on a shared machine several OpenMP threads stall); the timed
part starts after the imports (transformers' BERT and Llama classes are
imported first in both) and includes loading the models.

Run from the repository root::

    .venv/bin/python benchmarks/selfcheck_vs_package.py --responses 20 --samples 5

The package's virtual environment is ``benchmarks/.venv-selfcheck``
(git-ignored); the script creates it when missing with
``pip install -c constraints.txt selfcheckgpt==0.1.7 bert-score==0.3.13``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / "benchmarks" / ".venv-selfcheck"
PACKAGE_PYTHON = VENV / "bin" / "python"
PACKAGES = ["selfcheckgpt==0.1.7", "bert-score==0.3.13"]
LAYER = 2
MAX_TOKENS = 5
VARIANTS = ("ngram_avg", "ngram_max", "bertscore", "nli", "prompt")
RESULT = REPO / "benchmarks" / "results" / "selfcheck_vs_package.json"
WORDS = (
    "the a cat dog bird fish horse city river mountain king queen doctor teacher "
    "paris london rome berlin tokyo madrid red blue green black white small large old new "
    "is was are were has had sat ran flew swam lives lived sees saw likes liked "
    "on in at near under over with without from to of and or but not"
).split()


def ensure_venv() -> None:
    """Create the package's virtual environment unless it is there."""
    if PACKAGE_PYTHON.exists():
        return
    print(f"creating {VENV} (once) ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "pip"), "install", "-q", "-c", str(REPO / "constraints.txt")]
    subprocess.run([*pip, *PACKAGES], check=True)


def make_inputs(n: int, k: int, seed: int) -> list[dict[str, Any]]:
    """Return ``n`` responses of three sentences, each with ``k`` samples.

    A sample repeats each response sentence with probability one half and
    adds one or two sentences of its own.
    """
    import numpy as np

    from realitycheck.text import split_sentences

    rng = np.random.default_rng(seed)

    def sentence() -> str:
        return " ".join(rng.choice(WORDS, size=int(rng.integers(4, 10)))) + "."

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
    start = time.perf_counter()
    ngram = SelfCheckNgram(n=1)
    docs = [ngram.predict(x["sentences"], x["text"], x["samples"])["doc_level"] for x in inputs]
    seconds = time.perf_counter() - start
    out["ngram_avg"] = {"values": [d["avg_neg_logprob"] for d in docs], "seconds": seconds}
    out["ngram_max"] = {"values": [d["avg_max_neg_logprob"] for d in docs], "seconds": seconds}
    start = time.perf_counter()
    checker = SelfCheckBERTScore(rescale_with_baseline=False)
    values = [float(checker.predict(x["sentences"], x["samples"]).mean()) for x in inputs]
    out["bertscore"] = {"values": values, "seconds": time.perf_counter() - start}
    start = time.perf_counter()
    nli = SelfCheckNLI(nli_model=cfg["nli"], device=torch.device("cpu"))
    values = [float(nli.predict(x["sentences"], x["samples"]).mean()) for x in inputs]
    out["nli"] = {"values": values, "seconds": time.perf_counter() - start}
    start = time.perf_counter()
    prompter = SelfCheckLLMPrompt(model=cfg["llama"], device=torch.device("cpu"))
    prompter.set_prompt_template(cfg["template"])
    values = [float(prompter.predict(x["sentences"], x["samples"]).mean()) for x in inputs]
    out["prompt"] = {"values": values, "seconds": time.perf_counter() - start}
    return out


def realitycheck_worker(cfg: dict[str, Any]) -> dict[str, Any]:
    """Run realitycheck's three detectors on the same inputs."""
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
        "ngram_avg": SelfCheckNgram(statistic="avg"),
        "ngram_max": SelfCheckNgram(statistic="max"),
        "bertscore": SelfCheckBERTScore(model=cfg["bert"], layer=cfg["layer"], device="cpu"),
        "nli": SelfCheckNLI(judge=HFBackend(model=cfg["nli"], device="cpu"), premise="sentence"),
        "prompt": SelfCheckPrompt(
            judge=HFBackend(model=cfg["llama"], device="cpu"), max_tokens=MAX_TOKENS
        ),
    }
    for name, detector in detectors.items():
        start = time.perf_counter()
        scores = detector.score(responses, Needs())
        out[name] = {
            "values": [s.value for s in scores],
            "errors": [s.error for s in scores if s.error],
            "seconds": time.perf_counter() - start,
        }
    return out


def run_worker(python: Path, role: str, config: Path) -> dict[str, Any]:
    """Run this file as ``role`` worker under ``python`` and return what it printed."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    env["PYTHONPATH"] = str(REPO / "src")
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


def report(ours: dict[str, Any], theirs: dict[str, Any], n_pairs: int) -> list[dict[str, str]]:
    """Print one line per variant: agreement, throughputs and their ratio; return result rows."""
    import numpy as np

    header = ("variant", "max |diff|", "rc samples/s", "pkg samples/s", "ratio")
    print("{:<10} {:>11} {:>13} {:>14} {:>7}".format(*header))
    rows = []
    for name in VARIANTS:
        a = np.array(ours[name]["values"], dtype=float)
        b = np.array(theirs[name]["values"], dtype=float)
        ours_rate = n_pairs / ours[name]["seconds"]
        theirs_rate = n_pairs / theirs[name]["seconds"]
        diff = float(np.nanmax(np.abs(a - b)))
        print(
            f"{name:<10} {diff:>11.2e} {ours_rate:>13.1f} "
            f"{theirs_rate:>14.1f} {ours_rate / theirs_rate:>6.1f}x"
        )
        if ours[name]["errors"]:
            print(f"  realitycheck errors: {ours[name]['errors'][:2]}")
        rows.append(
            {
                "work": f"SelfCheckGPT {name}, {n_pairs} (response, sample) pairs, tiny models",
                "realitycheck": f"{ours_rate:.1f} samples/s",
                "alternative": f"selfcheckgpt 0.1.7 {theirs_rate:.1f} samples/s",
                "ratio": f"{ours_rate / theirs_rate:.1f}x",
                "note": f"max |value difference| {diff:.1e}",
            }
        )
    return rows


def write_result(rows: list[dict[str, str]], command: str) -> None:
    """Write :data:`RESULT` (schema: benchmark, date, machine, command, rows)."""
    import datetime as dt
    import platform

    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    result = {
        "benchmark": "selfcheck_vs_package",
        "date": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs{load}",
        "command": command,
        "rows": rows,
    }
    RESULT.parent.mkdir(exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULT}")


def main() -> None:
    """Build the inputs and models, run both tools, print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=20)
    parser.add_argument("--samples", type=int, default=5)
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
    sys.path.insert(0, str(REPO / "src"))
    sys.path.insert(0, str(REPO / "benchmarks"))
    from _tiny_llama import build_llama

    package_python = args.package_python or PACKAGE_PYTHON
    if args.package_python is None:
        ensure_venv()
    inputs = make_inputs(args.responses, args.samples, args.seed)
    template = prompt_template()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_bert(root / "bert")
        build_nli(root / "bert", root / "nli")
        texts = [x["text"] for x in inputs] + [s for x in inputs for s in x["samples"]]
        build_llama(root / "llama", [*texts, template, "Yes No yes no"])
        cfg = {
            "inputs": inputs,
            "bert": str(root / "bert"),
            "llama": str(root / "llama"),
            "nli": str(root / "nli"),
            "layer": LAYER,
            "template": template,
            "threads": args.threads,
        }
        config = root / "config.json"
        config.write_text(json.dumps(cfg))
        ours = run_worker(Path(sys.executable), "realitycheck", config)
        theirs = run_worker(package_python, "package", config)
    n_pairs = args.responses * args.samples
    print(
        f"{args.responses} responses x {args.samples} samples, 3 sentences each, "
        f"{args.threads} torch thread(s); ratio = realitycheck / selfcheckgpt 0.1.7"
    )
    rows = report(ours, theirs, n_pairs)
    write_result(rows, shlex.join(["python", "benchmarks/selfcheck_vs_package.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
