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
stored labels must equal the script's F1s. ``realitycheck detect -d truthfulqa
-D length`` is timed the same way against ``benchmarks/_length_script.py``,
which counts the words of the same answers. The result goes to
``benchmarks/results/rouge_l.json``. Run from the repository root:

    .venv/bin/python benchmarks/rouge_l.py [--repeats 3] [--before OLD_CHECKOUT]

With ``--before`` (e.g. ``git archive cc6e7d1 src | tar -x -C /tmp/before``),
the label (dataset in the run and empty run) and detect commands also run on
that code, in the same rounds, and the notes give their times.

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


def _lines(run: Path) -> dict[str, int]:
    """Each stored response's line in the JSONL file, by response id."""
    responses = pq.read_table(run / "responses.parquet").to_pandas()
    metas = zip(responses.response_id, responses.meta, strict=True)
    return {r: json.loads(m)["line"] for r, m in metas}


def _stored_f1(run: Path) -> dict[int, float | None]:
    """The F1 of each stored rouge_l label (1 - score), by its answer's line in the JSONL file."""
    labels = pq.read_table(run / "labels.parquet").to_pandas()
    labels = labels[labels["labeler"] == "rouge_l"]
    line = _lines(run)
    return {
        line[r]: None if s is None or np.isnan(s) else 1.0 - s
        for r, s in zip(labels.response_id, labels.score, strict=True)
    }


def _stored_lengths(run: Path) -> dict[int, float]:
    """The value of each stored ``length`` score, by its answer's line in the JSONL file."""
    scores = pq.read_table(run / "scores.parquet").to_pandas()
    scores = scores[scores["detector"] == "length"]
    line = _lines(run)
    return {line[r]: v for r, v in zip(scores.response_id, scores.value, strict=True)}


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


def _drop(run: Path, table: str) -> Any:
    def drop() -> None:
        shutil.rmtree(run / f"{table}.parts", ignore_errors=True)
        (run / f"{table}.parquet").unlink(missing_ok=True)

    return drop


def end_to_end(root: Path, repeats: int, before: Path | None) -> list[dict[str, str]]:
    """Time ``realitycheck label`` / ``detect`` and the plain scripts as whole processes."""
    work = Path(tempfile.mkdtemp(prefix="rouge-l-bench-"))
    run, out, lengths = work / "run", work / "rouge_score.jsonl", work / "lengths.jsonl"
    common = ["-d", "truthfulqa", "--run", str(run), "--data-dir", str(root), "--no-cache"]
    label = [CLI, "label", "-l", "rouge_l", *common]
    detect = [CLI, "detect", "-D", "length", *common]
    script = [sys.executable, str(Path(__file__).with_name("_rouge_score_script.py"))]
    script += [str(root), str(out)]
    length_script = [sys.executable, str(Path(__file__).with_name("_length_script.py"))]
    length_script += [str(root), str(lengths)]
    drop_labels, drop_scores = _drop(run, "labels"), _drop(run, "scores")

    def fresh_run() -> None:
        shutil.rmtree(run, ignore_errors=True)

    commands = {"fresh": (label, None, fresh_run), "now": (label, None, drop_labels)}
    commands["script"] = (script, None, None)
    commands["detect"] = (detect, None, drop_scores)
    commands["length_script"] = (length_script, None, None)
    if before is not None:
        old_env = {"PYTHONPATH": str(before / "src")}
        commands["before"] = (label, old_env, drop_labels)
        commands["fresh_before"] = (label, old_env, fresh_run)
        commands["detect_before"] = (detect, old_env, drop_scores)
    try:
        timed = interleaved(commands, repeats)
        fresh, ours, theirs = timed["fresh"][0], timed["now"][0], timed["script"][0]
        drop_labels()
        drop_scores()
        run_process(label)  # the labels and scores of this checkout, to compare
        run_process(detect)
        expected = {}
        for line in out.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            expected[row["line"]] = row["rouge_l_f1"]
        stored = _stored_f1(run)
        diff = max(abs(f - expected[k]) for k, f in stored.items() if f is not None)
        unequal = sum((f is None) != (expected[k] is None) for k, f in stored.items())
        words = {}
        for line in lengths.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            words[row["line"]] = row["words"]
        stored_lengths = _stored_lengths(run)
        length_diff = max(abs(v - words[k]) for k, v in stored_lengths.items())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"end to end: label (dataset in the run) {ours:.2f} s; from a fresh run {fresh:.2f} s; "
        f"rouge-score script {theirs:.2f} s; "
        f"max abs diff {diff:.1e} over {len(stored):,} labels, {unequal} missing on one side only"
    )
    note = (
        f"whole processes, median of {repeats}; "
        f"F1 equal to {diff:.1e}; {unequal} answers without a word get F1 0 from "
        "rouge-score and no label (an error) from realitycheck"
    )
    then = fresh_then = ""
    if before is not None:
        old = timed["before"][0]
        then = f"; the code before this change took {old:.2f} s ({ratio(theirs, old)})"
        old_fresh = timed["fresh_before"][0]
        fresh_then = (
            f"; the code before this change took {old_fresh:.2f} s ({ratio(theirs, old_fresh)})"
        )
    command = "realitycheck label -d truthfulqa -l rouge_l --run RUN"
    scored, counted = timed["detect"][0], timed["length_script"][0]
    detect_then = ""
    if before is not None:
        old_detect = timed["detect_before"][0]
        detect_then = f"; the code before this change took {old_detect:.2f} s"
    print(
        f"end to end: detect -D length (dataset in the run) {scored:.2f} s; "
        f"plain length script {counted:.2f} s; max abs diff {length_diff:g} "
        f"over {len(stored_lengths):,} scores{detect_then}"
    )
    return [
        {
            "work": f"`{command}`, the dataset already in RUN, vs a plain rouge-score script "
            "reading the same files",
            "realitycheck": f"{ours:.2f} s",
            "alternative": f"{theirs:.2f} s",
            "ratio": ratio(theirs, ours),
            "note": note + then,
        },
        {
            "work": "the same from an empty RUN (loads the dataset first)",
            "realitycheck": f"{fresh:.2f} s",
            "alternative": f"{theirs:.2f} s",
            "ratio": ratio(theirs, fresh),
            "note": note + fresh_then,
        },
        {
            "work": "`realitycheck detect -d truthfulqa -D length --run RUN`, the dataset already "
            "in RUN, vs a plain script counting the words of the same answers",
            "realitycheck": f"{scored:.2f} s",
            "alternative": f"{counted:.2f} s",
            "ratio": ratio(counted, scored),
            "note": f"whole processes, median of {repeats}; values equal (max abs diff "
            f"{length_diff:g}); the plain script "
            "has no run to read or write, so this is start-up and bookkeeping" + detect_then,
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
    flags = "" if args.repeats == 3 else f" --repeats {args.repeats}"
    flags += "" if args.before is None else " --before BEFORE"
    write_result("rouge_l", rows, f"python benchmarks/rouge_l.py{flags}")


if __name__ == "__main__":
    main()
