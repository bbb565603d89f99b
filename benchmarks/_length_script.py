"""The plain alternative to ``realitycheck detect -d truthfulqa -D length``, as one script.

Reads the TruthfulQA answers and writes one JSON line per answer (its line and
its number of whitespace-separated words, the ``length`` detector's default
unit) to OUT. ``benchmarks/rouge_l.py`` times it as a whole process. Usage:
``python benchmarks/_length_script.py DATA_DIR OUT``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(data: Path, out: Path) -> None:
    with (
        open(data / "truthfulqa" / "finetune_truth.jsonl", encoding="utf-8") as f,
        open(out, "w", encoding="utf-8") as sink,
    ):
        for line_no, line in enumerate(f, start=1):
            prompt = json.loads(line)["prompt"]
            _, answer = prompt.removeprefix("Q: ").removesuffix("\nTrue:").split("\nA: ", 1)
            sink.write(json.dumps({"line": line_no, "words": len(answer.split())}) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
