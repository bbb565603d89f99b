"""A detector on the answers a dataset ships says what they lack, not what a backend dropped.

Sampling detectors (semantic entropy, LN-entropy, Mean-Len, SelfCheck) need
several answers per question, which a dataset that ships one answer per
question never has; log-probability detectors need a model to read the
answers. Issue 25: both used to say "generate it with a plan that asks for
'samples', on a backend that supplies it", as if a backend had failed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from realitycheck import Response, RunContext
from realitycheck.cli import main
from realitycheck.detectors import detectors


def _fruit(fruit_answers, path: Path, n: int = 6) -> str:
    """A files dataset of ``n`` answers with human labels (no samples, no log-probs)."""
    fruit_answers(path, n)
    return (
        f"files[path={path},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid+model:llm]"
    )


@pytest.mark.parametrize("key", ["ln_entropy", "semantic_entropy", "mean_len", "selfcheck_ngram"])
def test_a_sampling_detector_on_shipped_answers_says_they_carry_no_samples(
    tmp_path, capsys, fruit_answers, key
):
    dataset = _fruit(fruit_answers, tmp_path / "answers.jsonl")
    assert main(["-q", "detect", "-d", dataset, "-D", key, "--out", str(tmp_path / "run")]) == 0
    printed = capsys.readouterr()
    assert f"{key}: 0 computed, 6 missing, 0 already stored" in printed.out
    assert (
        f"{key}: missing because the dataset's responses carry no samples (it ships its "
        "answers; sampling detectors need several answers per question: generate them with "
        "`realitycheck generate`, or give `samples=` columns to a files dataset)"
    ) in printed.err
    assert "backend" not in printed.err and "not returned at generation" not in printed.err


def test_a_log_prob_detector_on_shipped_answers_says_how_to_read_them(
    tmp_path, capsys, fruit_answers
):
    dataset = _fruit(fruit_answers, tmp_path / "answers.jsonl")
    assert (
        main(["-q", "detect", "-d", dataset, "-D", "perplexity", "--out", str(tmp_path / "r")]) == 0
    )
    err = capsys.readouterr().err
    assert (
        "perplexity: missing because the dataset's responses carry no token "
        "log-probabilities (it ships its answers: read them through a local model with "
        "`realitycheck detect -b 'hf[model=PATH]'`, or generate answers with "
        "`realitycheck generate`)"
    ) in err


def test_a_generated_response_still_says_how_to_generate_the_samples():
    generated = Response(
        response_id="r",
        example_id="e",
        model="tiny",
        text="Paris.",
        decoding="greedy",
        meta={"backend": "mock[reply=Paris]", "plan": "greedy", "generation": "g"},
    )
    (score,) = detectors.create("semantic_entropy").score([generated], RunContext())
    assert "generate it with a plan that asks for 'samples'" in score.error
    assert "ships its answers" not in score.error
