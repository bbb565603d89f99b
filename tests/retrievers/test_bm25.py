"""BM25 retrieval: scores against the formula written here, the index cache, bad corpora."""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter

import numpy as np
import pytest

from realitycheck.errors import InvalidInputError, MissingDependencyError
from realitycheck.retrievers import Passage, prepend_passages, read_corpus, retrievers

WORDS = [f"w{i:02d}" for i in range(30)]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _random_corpus(rng, n=40):
    rows = []
    for i in range(n):
        length = int(rng.integers(3, 25))
        words = rng.choice(WORDS, size=length, replace=True)
        rows.append({"id": f"p{i}", "text": " ".join(words), "title": f"T{i}"})
    return rows


def _reference_scores(texts, query, *, k1, b, method):
    """Okapi BM25 written out (Robertson & Zaragoza 2009; lucene / atire idf)."""
    tokenize = lambda t: re.findall(r"\b\w\w+\b", t.lower())  # noqa: E731
    docs = [Counter(tokenize(t)) for t in texts]
    lengths = np.array([sum(d.values()) for d in docs], dtype=float)
    n, avgdl = len(docs), lengths.mean()
    out = np.zeros(n)
    for term in tokenize(query):
        df = sum(term in d for d in docs)
        if df == 0:
            continue
        if method == "lucene":
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        else:  # atire
            idf = math.log(n / df)
        for i, d in enumerate(docs):
            tf = d.get(term, 0)
            norm = k1 * (1 - b + b * lengths[i] / avgdl)
            if method == "lucene":
                out[i] += idf * tf / (tf + norm)
            else:
                out[i] += idf * tf * (k1 + 1) / (tf + norm)
    return out


@pytest.mark.parametrize(
    ("seed", "k1", "b", "method"),
    [
        (0, 1.5, 0.75, "lucene"),
        (1, 0.9, 0.4, "lucene"),
        (2, 1.2, 1.0, "atire"),
        (3, 2.0, 0.0, "lucene"),
    ],
)
def test_scores_equal_the_bm25_formula(tmp_path, seed, k1, b, method):
    rng = np.random.default_rng(seed)
    rows = _random_corpus(rng)
    corpus = _write(tmp_path / "c.jsonl", rows)
    bm25 = retrievers.create(
        "bm25", corpus=corpus, k1=k1, b=b, method=method, stopwords=False, cache_dir=tmp_path
    )
    index = bm25.open()
    for _ in range(5):
        query = " ".join(rng.choice(WORDS + ["absent"], size=4))
        expected = _reference_scores([r["text"] for r in rows], query, k1=k1, b=b, method=method)
        np.testing.assert_allclose(index.scores(query), expected, rtol=1e-5, atol=1e-6)


def test_search_returns_the_k_best_positive_passages_ties_in_corpus_order(tmp_path):
    rows = [
        {"id": "a", "text": "alpha beta"},
        {"id": "b", "text": "gamma delta"},
        {"id": "c", "text": "alpha beta"},  # ties with a: a comes first
        {"id": 7, "text": "alpha alpha alpha beta", "title": "Seven"},
        {"id": "e", "text": "epsilon zeta"},
    ]
    corpus = _write(tmp_path / "c.jsonl", rows)
    index = retrievers.create("bm25", corpus=corpus, k=2, cache_dir=tmp_path).open()
    expected = _reference_scores(
        [r["text"] for r in rows], "alpha", k1=1.5, b=0.75, method="lucene"
    )
    found, none = index.search(["Alpha?", "omega"])
    order = sorted(range(len(rows)), key=lambda i: (-expected[i], i))[:2]
    assert [p.passage_id for p in found] == [str(rows[i]["id"]) for i in order] == ["7", "a"]
    assert found[0].title == "Seven" and found[0].score == pytest.approx(expected[3], rel=1e-5)
    assert none == ()  # no passage shares a term with the query
    three = retrievers.create("bm25", corpus=corpus, k=3, cache_dir=tmp_path).open()
    assert [p.passage_id for p in three.search(["alpha"])[0]] == ["7", "a", "c"]


def test_query_words_keeps_the_end_of_the_query(tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [{"id": "x", "text": "red"}, {"id": "y", "text": "blue"}])
    index = retrievers.create("bm25", corpus=corpus, k=1, query_words=1, cache_dir=tmp_path).open()
    assert [p.passage_id for p in index.search(["red red blue"])[0]] == ["y"]


def test_the_index_is_saved_loaded_again_and_rebuilt_when_the_corpus_changes(tmp_path, monkeypatch):
    import bm25s

    rows = _random_corpus(np.random.default_rng(5), n=10)
    corpus = _write(tmp_path / "c.jsonl", rows)
    cache = tmp_path / "indexes"
    first = retrievers.create("bm25", corpus=corpus, cache_dir=cache).open()
    assert first.built and (first.folder / "realitycheck.json").exists()
    query = rows[0]["text"]

    def refuse(*args, **kwargs):
        raise AssertionError("the saved index should have been loaded")

    with monkeypatch.context() as patch:
        patch.setattr(bm25s.BM25, "index", refuse)
        again = retrievers.create("bm25", corpus=corpus, k=5, cache_dir=cache).open()
    assert not again.built and again.folder == first.folder  # k is not an index setting
    np.testing.assert_allclose(again.scores(query), first.scores(query))
    _write(corpus, [*rows, {"id": "new", "text": rows[0]["text"]}])
    changed = retrievers.create("bm25", corpus=corpus, cache_dir=cache).open()
    assert changed.built and changed.folder != first.folder
    assert "new" in {p.passage_id for p in changed.search([query])[0]}
    other = retrievers.create("bm25", corpus=corpus, k1=0.5, cache_dir=cache).open()
    assert other.built and other.folder != changed.folder
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        p.name for p in (first.folder, changed.folder, other.folder)
    )


def test_a_damaged_index_is_rebuilt(tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [{"id": "x", "text": "red apple"}])
    first = retrievers.create("bm25", corpus=corpus, cache_dir=tmp_path / "ix").open()
    (first.folder / "realitycheck.json").write_text("{not json", encoding="utf-8")
    again = retrievers.create("bm25", corpus=corpus, cache_dir=tmp_path / "ix").open()
    assert again.built and again.search(["apple"])[0][0].passage_id == "x"


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("", r"c\.jsonl: The corpus holds no passage"),
        ("\n  \n", r"c\.jsonl: The corpus holds no passage"),
        (
            '{"id": "a", "text": "ok"}\n{"id": "b"}\n',
            r"c\.jsonl, line 2, field 'text': .*Got nothing",
        ),
        ('{"id": "a", "text": "  "}\n', r"c\.jsonl, line 1, field 'text': .*Got '  '"),
        (
            '{"id": "a", "text": "ok"}\n\n{"id": "b", "text": "x",\n',
            r"c\.jsonl, line 3: The line is not valid JSON",
        ),
        (
            '{"id": "a", "text": "ok"}\n{"id": "a", "text": "x"}\n',
            r"line 2, field 'id': .*already used on line 1",
        ),
        ('{"text": "x"}\n', r"line 1, field 'id': Each passage needs an id"),
        ('{"id": true, "text": "x"}\n', r"line 1, field 'id'"),
        ('{"id": "a", "text": "x", "body": "y"}\n', r"line 1, field 'body': Unknown key 'body'"),
        ('{"id": "a", "text": "x", "title": 3}\n', r"line 1, field 'title': A passage title"),
        ('["a", "b"]\n', r"line 1: Each corpus line must be a JSON object"),
    ],
)
def test_a_bad_corpus_is_named_with_file_line_and_field(tmp_path, content, match):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=match):
        read_corpus(corpus)
    with pytest.raises(InvalidInputError, match=match):  # before any indexing
        retrievers.create("bm25", corpus=corpus, cache_dir=tmp_path / "ix").open()
    assert not (tmp_path / "ix").exists()


def test_a_missing_or_binary_corpus(tmp_path):
    with pytest.raises(InvalidInputError, match="does not exist"):
        read_corpus(tmp_path / "none.jsonl")
    bad = tmp_path / "b.jsonl"
    bad.write_bytes(b'{"id": "a", "text": "ok"}\n\xff\xfe\n')
    with pytest.raises(InvalidInputError, match=r"line 2: The corpus must be UTF-8"):
        read_corpus(bad)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"k": 0}, "'k' parameter of bm25 must be an int >= 1"),
        ({"b": 1.5}, "'b' parameter of bm25 must be a float in"),
        ({"method": "okapi"}, "'method' parameter of bm25 must be one of"),
        ({"corpus": ""}, "'corpus' parameter of bm25 must be a non-empty path"),
    ],
)
def test_bad_parameters_are_rejected(params, match):
    with pytest.raises(InvalidInputError, match=match):
        retrievers.create("bm25", **{"corpus": "c.jsonl", **params})


def test_without_bm25s_the_error_names_the_extra(tmp_path, monkeypatch):
    corpus = _write(tmp_path / "c.jsonl", [{"id": "x", "text": "red"}])
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(MissingDependencyError, match=r"realitycheck\[retrieval\]"):
        retrievers.create("bm25", corpus=corpus, cache_dir=tmp_path).open()


def test_passages_are_prepended_in_rank_order_with_the_template():
    found = (
        Passage(passage_id="7", text="First text.", title="One"),
        Passage(passage_id="a", text="Second text."),
    )
    text = prepend_passages("Question: who?", found)
    head, _, rest = text.partition("\n")
    assert head.startswith("A search of the reference corpus found the passages below")
    assert rest == "[1] One\nFirst text.\n\n[2] Second text.\n\nQuestion: who?"
    quoted = prepend_passages("Q", found, quote=lambda t: f"<p>{t}</p>")
    assert "<p>[1] One\nFirst text.\n\n[2] Second text.</p>\n\nQ" in quoted
    assert prepend_passages("Question: who?", ()) == "Question: who?"
