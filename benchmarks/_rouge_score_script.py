"""The plain alternative to ``realitycheck label -d truthfulqa -l rouge_l``, as one script.

Reads the TruthfulQA answers and references, scores every answer against its
best reference with the rouge-score package, and writes one JSON line per
answer (id and F1) to OUT. ``benchmarks/rouge_l.py`` times it as a whole
process. Usage: ``python benchmarks/_rouge_score_script.py DATA_DIR OUT``.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from rouge_score import rouge_scorer


def main(data: Path, out: Path) -> None:
    correct = {}
    with open(data / "truthfulqa" / "TruthfulQA.csv", encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f):
            answers = [a.strip() for a in row["Correct Answers"].split(";") if a.strip()]
            correct[row["Question"].strip()] = answers
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    with (
        open(data / "truthfulqa" / "finetune_truth.jsonl", encoding="utf-8") as f,
        open(out, "w", encoding="utf-8") as sink,
    ):
        for line_no, line in enumerate(f, start=1):
            prompt = json.loads(line)["prompt"]
            question, answer = prompt.removeprefix("Q: ").removesuffix("\nTrue:").split("\nA: ", 1)
            refs = correct.get(question.strip(), [])
            f1 = max((scorer.score(r, answer)["rougeL"].fmeasure for r in refs), default=None)
            sink.write(json.dumps({"line": line_no, "rouge_l_f1": f1}) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
