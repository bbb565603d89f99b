"""Vectorised ROUGE-L F1 vs the rouge-score package on the TruthfulQA human-judged answers.

Data: the 22,434 answers of ``truthfulqa/finetune_truth.jsonl``, each scored
against the "Correct Answers" of its question in ``truthfulqa/TruthfulQA.csv``
(best reference; answers whose question is not in the CSV have no reference and
give NaN on both sides). Both implementations run in the same process on the
same inputs, with and without the Porter stemmer, in interleaved rounds
(``--rounds``, default 3, after a warm-up; ``benchmarks/_results.py``:
medians of wall and CPU seconds, the ratio the median of the rounds'
ratios, the load stated); the note says how many of the values agree to 1e-9.

End to end, it then times whole processes: ``realitycheck label -d truthfulqa
-l rouge_l`` (on a run that already holds the dataset, and on an empty run)
against ``benchmarks/_rouge_score_script.py``, a plain script that reads the
same files, scores every answer with rouge-score and writes the F1s; the
stored labels must equal the script's F1s. ``realitycheck detect -d truthfulqa
-D length`` is timed the same way against ``benchmarks/_length_script.py``,
which counts the words of the same answers. All five commands run in each
round, in alternating order. The result goes to
``benchmarks/results/rouge_l.json``. Run from the repository root:

    .venv/bin/python benchmarks/rouge_l.py [--rounds 3]

The data folder is ``$REALITYCHECK_DATA_DIR`` or ``../shared/data``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from _results import (
    CLI,
    Rounds,
    compare_values,
    in_process,
    interleave,
    process,
    report,
    run_process,
    write_result,
)
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


def in_process_rows(
    predictions: list[str], references: list[list[str]], rounds: int
) -> list[dict[str, str]]:
    """Time the functions in one process, with and without the stemmer; return result rows."""
    rows = []
    n_pairs = sum(map(len, references))
    print(f"{len(predictions):,} answers, {n_pairs:,} (answer, reference) pairs")
    for use_stemmer in (False, True):
        print(f"use_stemmer={use_stemmer}:")
        sides = {
            "realitycheck": in_process(
                lambda s=use_stemmer: rouge_l_f1(predictions, references, use_stemmer=s)
            ),
            "rouge-score": in_process(
                lambda s=use_stemmer: rouge_score_loop(predictions, references, s)
            ),
        }
        timed = interleave(sides, rounds)
        ours, expected = timed.values["realitycheck"], timed.values["rouge-score"]
        checked = report(compare_values(list(ours), list(expected), tol=1e-9, what="F1"))
        print(
            f"  rouge-score {timed.seconds_text('rouge-score')}, realitycheck "
            f"{timed.seconds_text('realitycheck', 3)}: "
            f"{timed.ratio_text('rouge-score', 'realitycheck')}"
        )
        rows.append(
            {
                "work": f"ROUGE-L function on {len(predictions):,} TruthfulQA answers "
                f"({n_pairs:,} pairs){', Porter stemmer' if use_stemmer else ''}, in one process",
                "realitycheck": timed.seconds_text("realitycheck", 3),
                "alternative": f"rouge-score {timed.seconds_text('rouge-score')}",
                "ratio": timed.ratio_text("rouge-score", "realitycheck"),
                "note": f"{timed.note('rouge-score', 'realitycheck')}; {checked}",
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


def _drop(run: Path, table: str) -> Any:
    def drop() -> None:
        shutil.rmtree(run / f"{table}.parts", ignore_errors=True)
        (run / f"{table}.parquet").unlink(missing_ok=True)

    return drop


def _jsonl(path: Path, field: str) -> dict[int, Any]:
    """``field`` of each JSON line of ``path``, by its ``line``."""
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    return {row["line"]: row[field] for row in rows}


def end_to_end(root: Path, rounds: int) -> list[dict[str, str]]:
    """Time ``realitycheck label`` / ``detect`` and the plain scripts as whole processes."""
    work = Path(tempfile.mkdtemp(prefix="rouge-l-bench-"))
    run, out, lengths = work / "run", work / "rouge_score.jsonl", work / "lengths.jsonl"
    common = ["-d", "truthfulqa", "--run", str(run), "--data-dir", str(root), "--no-cache"]
    label = [CLI, "label", "-l", "rouge_l", *common]
    detect = [CLI, "detect", "-D", "length", *common]
    script = [sys.executable, str(Path(__file__).with_name("_rouge_score_script.py"))]
    length_script = [sys.executable, str(Path(__file__).with_name("_length_script.py"))]

    def fresh_run() -> None:
        shutil.rmtree(run, ignore_errors=True)

    sides = {  # alternating order: "in run" and "detect" find the run "fresh" made
        "fresh": process(label, setup=fresh_run),
        "in run": process(label, setup=_drop(run, "labels")),
        "script": process([*script, str(root), str(out)]),
        "detect": process(detect, setup=_drop(run, "scores")),
        "length script": process([*length_script, str(root), str(lengths)]),
    }
    try:
        timed = interleave(sides, rounds)
        _drop(run, "labels")()
        _drop(run, "scores")()
        run_process(label)  # the labels and scores of this checkout, to compare
        run_process(detect)
        expected, stored = _jsonl(out, "rouge_l_f1"), _stored_f1(run)
        words, stored_lengths = _jsonl(lengths, "words"), _stored_lengths(run)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = sorted(expected)
    both = [k for k in lines if stored.get(k) is not None and expected[k] is not None]
    one_side = [k for k in lines if (stored.get(k) is None) != (expected[k] is None)]
    f1 = compare_values([stored[k] for k in both], [expected[k] for k in both], tol=1e-9, what="F1")
    wordless = sum(
        stored.get(k) is None and expected[k] == 0.0 and not words.get(k) for k in one_side
    )
    checked = report(f1) + (
        f"; {len(one_side)} answers scored on one side only ({wordless} of them without a "
        "whitespace-separated word: F1 0 from rouge-score, no label (an error) from realitycheck)"
    )
    counts = report(
        compare_values(
            [stored_lengths.get(k) for k in sorted(words)],
            [words[k] for k in sorted(words)],
            tol=0.0,
            what="word counts",
        )
    )
    print(f"end to end: {_summary(timed)}")
    command = "realitycheck label -d truthfulqa -l rouge_l --run RUN"
    return [
        _row(
            f"`{command}`, the dataset already in RUN, vs a plain rouge-score script "
            "reading the same files",
            timed,
            "in run",
            "script",
            checked,
        ),
        _row(
            "the same from an empty RUN (loads the dataset first)",
            timed,
            "fresh",
            "script",
            checked,
        ),
        _row(
            "`realitycheck detect -d truthfulqa -D length --run RUN`, the dataset already "
            "in RUN, vs a plain script counting the words of the same answers",
            timed,
            "detect",
            "length script",
            counts + "; the plain script has no run to read or write, so this is start-up and "
            "bookkeeping",
        ),
    ]


def _summary(timed: Rounds) -> str:
    return "; ".join(f"{name} {timed.seconds_text(name)}" for name in timed.timings)


def _row(work: str, timed: Rounds, ours: str, theirs: str, checked: str) -> dict[str, str]:
    return {
        "work": work,
        "realitycheck": timed.seconds_text(ours),
        "alternative": timed.seconds_text(theirs),
        "ratio": timed.ratio_text(theirs, ours),
        "note": f"whole processes, {timed.note(theirs, ours)}; {checked}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="Timed rounds of each side.")
    args = parser.parse_args()
    root = data_dir()
    rows = in_process_rows(*load_truthfulqa(root), args.rounds)
    rows += end_to_end(root, args.rounds)
    flags = "" if args.rounds == 3 else f" --rounds {args.rounds}"
    write_result("rouge_l", rows, f"python benchmarks/rouge_l.py{flags}")


if __name__ == "__main__":
    main()
