"""selfcheck_nli on a tiny NLI classifier, checked against a plain transformers forward pass."""

from __future__ import annotations

import numpy as np
import pytest

from realitycheck import Response, RunContext
from realitycheck.backends import CallCache
from realitycheck.detectors import detectors
from realitycheck.errors import InvalidInputError

torch = pytest.importorskip("torch")

SAMPLES = (
    "The tower was completed in 1889. It is in Paris.",
    "The tower is in Rome.",
    "It was designed by the company of Gustave and it is 330 metres tall.",
)
RESPONSES = [
    Response(response_id="r0", example_id="e", model="m", text=SAMPLES[0], samples=SAMPLES[1:]),
    Response(
        response_id="r1",
        example_id="e",
        model="m",
        text="London is the capital of France. The king built a bridge. It is tall.",
        samples=SAMPLES,
    ),
]


def _hf(folder):
    return {"name": "hf", "params": {"model": str(folder), "device": "cpu"}}


def _expected(folder, response, sentences, premise="sample"):
    """mean over sentences of mean over samples of p_c / (p_e + p_c), written out plainly."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    per_sentence = []
    for sentence in sentences:
        shares = []
        for sample in response.samples:
            first, second = (sample, sentence) if premise == "sample" else (sentence, sample)
            enc = tokenizer(first, second, truncation=True, return_tensors="pt")
            with torch.no_grad():
                p = torch.softmax(model(**enc).logits[0].double(), dim=0)
            shares.append(float(p[0] / (p[0] + p[2])))  # CONTRADICTION 0, ENTAILMENT 2
        per_sentence.append(np.mean(shares))
    return float(np.mean(per_sentence))


@pytest.mark.parametrize("premise", ["sample", "sentence"])
def test_value_is_the_mean_contradiction_share_over_sentences_and_samples(
    tiny_nli_dir, tmp_path, premise
):
    det = detectors.create("selfcheck_nli", judge=_hf(tiny_nli_dir), premise=premise)
    cache = CallCache(tmp_path / "cache.sqlite")
    scores = det.score(RESPONSES, RunContext(cache=cache))
    sentences = [
        ["The tower was completed in 1889.", "It is in Paris."],
        ["London is the capital of France.", "The king built a bridge.", "It is tall."],
    ]
    for score, response, own in zip(scores, RESPONSES, sentences, strict=True):
        assert score.error == ""
        expected = _expected(tiny_nli_dir, response, own, premise)
        assert score.value == pytest.approx(expected, abs=1e-6)
    assert len({round(s.value, 6) for s in scores}) == 2
    rerun = det.score(RESPONSES, RunContext(cache=cache))
    assert [s.value for s in rerun] == [s.value for s in scores]


def test_missing_samples_and_empty_text_are_errors_not_values():
    det = detectors.create("selfcheck_nli", judge="mock")
    bare = Response(response_id="a", example_id="e", model="m", text="It is tall.")
    empty = Response(response_id="b", example_id="e", model="m", text=" ", samples=("x",))
    blank = Response(response_id="c", example_id="e", model="m", text="It is.", samples=(" ",))
    scores = det.score([bare, empty, blank], RunContext())
    assert [s.value for s in scores] == [None, None, None]
    assert "samples" in scores[0].error and "empty" in scores[1].error
    assert scores[2].error == "every sample is empty"


def test_a_classifier_without_a_contradiction_class_fails_after_one_pair(
    tiny_consistency_dir, pairs_scored
):
    det = detectors.create("selfcheck_nli", judge=_hf(tiny_consistency_dir))
    with pytest.raises(InvalidInputError, match="tiny-consistency.*no contradiction class"):
        det.score(RESPONSES, RunContext())
    assert pairs_scored == [1]


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"judge": "openai[model=m]"}, "'pairs' capability"),
        ({"judge": "mock", "labels": ["entailment", "neutral"]}, "contradiction class"),
    ],
)
def test_bad_parameters_are_refused_when_built(params, match):
    with pytest.raises(InvalidInputError, match=match):
        detectors.create("selfcheck_nli", **params)
