"""Vectorised ROUGE-L F1 vs the rouge-score package on the TruthfulQA human-judged answers.

Data: the 22,434 answers of ``truthfulqa/finetune_truth.jsonl``, each scored
against the "Correct Answers" of its question in ``truthfulqa/TruthfulQA.csv``
(best reference; answers whose question is not in the CSV have no reference and
give NaN on both sides). Both implementations run in the same process on the
same inputs, with and without the Porter stemmer; the results must agree to
1e-9. rouge-score runs once; ours runs three times and the median is shown.

End to end, it then times whole processes: ``realitycheck label -d truthfulqa
-l rouge_l`` (on a run that already holds the dataset, and on an empty run)
against ``benchmarks/_rouge_score_script.py``, a plain script that reads the
same files, scores every answer with rouge-score and writes the F1s; the
stored labels must equal the script's F1s. The result goes to
``benchmarks/results/rouge_l.json``. Run from the repository root:

    .venv/bin/python benchmarks/rouge_l.py [--repeats 3] [--before OLD_CHECKOUT]

With ``--before`` (e.g. ``git archive cc6e7d1 src | tar -x -C /tmp/before``),
the label command also runs on that code, and the note gives its time.

The data folder is ``$REALITYCHECK_DATA_DIR`` or ``../shared/data``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from _results import CLI, ratio, run_process, write_result
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


def in_process(predictions: list[str], references: list[list[str]]) -> list[dict[str, str]]:
    """Time the functions in one process, with and without the stemmer; return result rows."""
    rows = []
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
        rows.append(
            {
                "work": f"ROUGE-L function on {len(predictions):,} TruthfulQA answers "
                f"({n_pairs:,} pairs){', Porter stemmer' if use_stemmer else ''}, in one process",
                "realitycheck": f"{mine:.3f} s",
                "alternative": f"rouge-score {theirs:.2f} s",
                "ratio": ratio(theirs, mine),
                "note": f"values equal to {diff:.1e}",
            }
        )
    return rows


def _stored_f1(run: Path) -> dict[int, float | None]:
    """The F1 of each stored rouge_l label (1 - score), by its answer's line in the JSONL file."""
    labels = pq.read_table(run / "labels.parquet").to_pandas()
    labels = labels[labels["labeler"] == "rouge_l"]
    responses = pq.read_table(run / "responses.parquet").to_pandas()
    metas = zip(responses.response_id, responses.meta, strict=True)
    line = {r: json.loads(m)["line"] for r, m in metas}
    return {
        line[r]: None if s is None or np.isnan(s) else 1.0 - s
        for r, s in zip(labels.response_id, labels.score, strict=True)
    }


def interleaved(commands: dict[str, Any], repeats: int) -> dict[str, tuple[float, int]]:
    """Median wall seconds and peak MiB of each command, run in turn for ``repeats`` rounds.

    One untimed round goes first (it also loads the dataset into the run); the
    rounds alternate the commands so that a busy machine slows them alike.
    ``commands`` maps a name to (argv, extra environment, untimed setup or None).
    """
    times: dict[str, list[tuple[float, int]]] = {name: [] for name in commands}
    for k in range(repeats + 1):
        for name, (argv, env, setup) in commands.items():
            if setup is not None:
                setup()
            seconds, peak = run_process(argv, env=env)
            if k:
                times[name].append((seconds, peak))
    return {
        name: (statistics.median(t for t, _ in got), max(p for _, p in got))
        for name, got in times.items()
    }


def end_to_end(root: Path, repeats: int, before: Path | None) -> list[dict[str, str]]:
    """Time ``realitycheck label`` and the plain rouge-score script as whole processes."""
    work = Path(tempfile.mkdtemp(prefix="rouge-l-bench-"))
    run, out = work / "run", work / "rouge_score.jsonl"
    label = [CLI, "label", "-d", "truthfulqa", "-l", "rouge_l", "--run", str(run)]
    label += ["--data-dir", str(root), "--no-cache"]
    script = [sys.executable, str(Path(__file__).with_name("_rouge_score_script.py"))]
    script += [str(root), str(out)]

    def drop_labels() -> None:
        shutil.rmtree(run / "labels.parts", ignore_errors=True)
        (run / "labels.parquet").unlink(missing_ok=True)

    def fresh_run() -> None:
        shutil.rmtree(run, ignore_errors=True)

    commands = {"fresh": (label, None, fresh_run), "now": (label, None, drop_labels)}
    commands["script"] = (script, None, None)
    if before is not None:
        commands["before"] = (label, {"PYTHONPATH": str(before / "src")}, drop_labels)
    try:
        timed = interleaved(commands, repeats)
        (fresh, fresh_rss), (ours, ours_rss) = timed["fresh"], timed["now"]
        theirs, theirs_rss = timed["script"]
        drop_labels()
        run_process(label)  # the labels of this checkout, to compare
        expected = {}
        for line in out.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            expected[row["line"]] = row["rouge_l_f1"]
        stored = _stored_f1(run)
        diff = max(abs(f - expected[k]) for k, f in stored.items() if f is not None)
        unequal = sum((f is None) != (expected[k] is None) for k, f in stored.items())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"end to end: label (dataset in the run) {ours:.2f} s, {ours_rss} MiB; from a fresh run "
        f"{fresh:.2f} s, {fresh_rss} MiB; rouge-score script {theirs:.2f} s, {theirs_rss} MiB; "
        f"max abs diff {diff:.1e} over {len(stored):,} labels, {unequal} missing on one side only"
    )
    note = (
        f"whole processes, median of {repeats}; peak RSS {{}} MiB vs {theirs_rss} MiB; "
        f"F1 equal to {diff:.1e}; {unequal} answers without a word get F1 0 from "
        "rouge-score and no label (an error) from realitycheck"
    )
    then = ""
    if before is not None:
        old = timed["before"][0]
        then = f"; the code before issue 13 took {old:.2f} s ({ratio(theirs, old)})"
    command = "realitycheck label -d truthfulqa -l rouge_l --run RUN"
    return [
        {
            "work": f"`{command}`, the dataset already in RUN, vs a plain rouge-score script "
            "reading the same files",
            "realitycheck": f"{ours:.2f} s",
            "alternative": f"{theirs:.2f} s",
            "ratio": ratio(theirs, ours),
            "note": note.format(ours_rss) + then,
        },
        {
            "work": "the same from an empty RUN (loads the dataset first)",
            "realitycheck": f"{fresh:.2f} s",
            "alternative": f"{theirs:.2f} s",
            "ratio": ratio(theirs, fresh),
            "note": note.format(fresh_rss),
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="Timed runs per process.")
    parser.add_argument("--before", type=Path, help="Also time the label command of this checkout.")
    args = parser.parse_args()
    root = data_dir()
    rows = in_process(*load_truthfulqa(root))
    rows += end_to_end(root, args.repeats, args.before)
    flags = "" if args.before is None else " --before BEFORE"
    write_result("rouge_l", rows, f"python benchmarks/rouge_l.py{flags}")


if __name__ == "__main__":
    main()
