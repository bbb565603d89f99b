"""Vectorised ROUGE-L F1 vs the rouge-score package on the TruthfulQA human-judged answers.

Data: the 22,434 answers of ``truthfulqa/finetune_truth.jsonl``, each scored
against the "Correct Answers" of its question in ``truthfulqa/TruthfulQA.csv``
(best reference; answers whose question is not in the CSV have no reference and
give NaN on both sides). Both implementations run in the same process on the
same inputs, with and without the Porter stemmer; the results must agree to
1e-9. rouge-score runs once; ours runs three times and the median is shown.
Run from the repository root:

    .venv/bin/python benchmarks/rouge_l.py

The data folder is ``$REALITYCHECK_DATA_DIR`` or ``../shared/data``.
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
from rouge_score import rouge_scorer

from realitycheck.labelers.rouge import rouge_l_f1


def data_dir() -> Path:
    env = os.environ.get("REALITYCHECK_DATA_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load_truthfulqa(root: Path) -> tuple[list[str], list[list[str]]]:
    correct = {}
    with open(root / "truthfulqa" / "TruthfulQA.csv", encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f):
            answers = [a.strip() for a in row["Correct Answers"].split(";") if a.strip()]
            correct[row["Question"].strip()] = answers
    predictions, references = [], []
    with open(root / "truthfulqa" / "finetune_truth.jsonl", encoding="utf-8") as f:
        for line in f:
            prompt = json.loads(line)["prompt"]
            question, answer = prompt.removeprefix("Q: ").removesuffix("\nTrue:").split("\nA: ", 1)
            predictions.append(answer)
            references.append(correct.get(question.strip(), []))
    return predictions, references


def rouge_score_loop(
    predictions: list[str], references: list[list[str]], use_stemmer: bool
) -> np.ndarray:
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)
    return np.array(
        [
            max((scorer.score(r, p)["rougeL"].fmeasure for r in refs), default=np.nan)
            for p, refs in zip(predictions, references, strict=True)
        ]
    )


def main() -> None:
    predictions, references = load_truthfulqa(data_dir())
    n_pairs = sum(map(len, references))
    print(f"{len(predictions):,} answers, {n_pairs:,} (answer, reference) pairs")
    for use_stemmer in (False, True):
        start = time.perf_counter()
        expected = rouge_score_loop(predictions, references, use_stemmer)
        theirs = time.perf_counter() - start
        times = []
        for _ in range(3):
            start = time.perf_counter()
            ours = rouge_l_f1(predictions, references, use_stemmer=use_stemmer)
            times.append(time.perf_counter() - start)
        if not np.array_equal(np.isnan(ours), np.isnan(expected)):
            raise SystemExit("The two implementations disagree on which answers have no reference.")
        diff = float(np.nanmax(np.abs(ours - expected)))
        if diff > 1e-9:
            raise SystemExit(f"Max abs difference {diff:.3g} > 1e-9 (use_stemmer={use_stemmer}).")
        mine = statistics.median(times)
        print(
            f"use_stemmer={use_stemmer!s:5}  rouge-score {theirs:6.2f} s   "
            f"realitycheck {mine:6.3f} s   speed-up {theirs / mine:5.1f}x   "
            f"max abs diff {diff:.1e}"
        )


if __name__ == "__main__":
    main()
