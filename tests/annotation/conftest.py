"""Small runs to annotate: the quiz of ``fixtures/answers.jsonl`` and a larger synthetic one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from realitycheck.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
QUIZ = (
    f"files[path={FIXTURES / 'answers.jsonl'},text=answer,columns=example_id:qid+model:llm,"
    "name=quiz]"
)
"""The dataset of the Label Studio round trip (scripts/label_studio_roundtrip.py)."""


def _make(folder: Path, dataset: str, labelers: str) -> Path:
    run = folder / "run"
    assert main(["-q", "label", "-d", dataset, "-l", labelers, "--out", str(run)]) == 0
    return run


@pytest.fixture(scope="session")
def quiz_key() -> str:
    """The dataset key of the quiz run (for verbs that name the dataset again)."""
    return QUIZ


@pytest.fixture(scope="session")
def _quiz_template(tmp_path_factory) -> Path:
    return _make(tmp_path_factory.mktemp("quiz"), QUIZ, "exact_match,rouge_l,token_f1")


@pytest.fixture
def quiz_run(_quiz_template, tmp_path) -> Path:
    """A run of the 16 quiz answers labelled by exact_match, rouge_l and token_f1 (a copy)."""
    return Path(shutil.copytree(_quiz_template, tmp_path / "quiz"))


def write_sizes(path: Path, n: int, seed: int = 0) -> tuple[Path, dict[str, bool]]:
    """Write ``n`` answers of two models with a hidden truth; return the file and the truth.

    Fields: ``qid``, ``question``, ``answer``, ``references``, ``llm``. The truth
    (by example id ``sizes/<qid>``) is what simulated annotators see through noise.
    """
    rng = np.random.default_rng(seed)
    rows, truth = [], {}
    for i in range(n):
        wrong = bool(rng.random() < 0.4)
        words = " and more words" * int(rng.integers(0, 6))
        rows.append(
            {
                "qid": f"q{i}",
                "question": f"How large is item {i}?",
                "answer": ("It is tiny" if wrong else f"It is {i} metres") + words,
                "references": f"{i} metres",
                "llm": "model-a" if i % 2 else "model-b",
            }
        )
        truth[f"q{i}"] = wrong
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, truth


@pytest.fixture(scope="session")
def _sizes_template(tmp_path_factory) -> tuple[Path, dict[str, bool]]:
    folder = tmp_path_factory.mktemp("sizes")
    path, truth = write_sizes(folder / "sizes.jsonl", 60)
    dataset = f"files[path={path},text=answer,columns=example_id:qid+model:llm,name=sizes]"
    return _make(folder, dataset, "exact_match,rouge_l"), truth


@pytest.fixture
def sizes_run(_sizes_template, tmp_path) -> tuple[Path, dict[str, bool]]:
    """A run of 60 answers (exact_match, rouge_l) and each response's hidden truth, by qid."""
    run, truth = _sizes_template
    return Path(shutil.copytree(run, tmp_path / "sizes")), truth
