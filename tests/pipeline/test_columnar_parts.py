"""Columnar components and parts: the same stored records as the per-record path, checked apart.

A labeler or detector that overrides ``label_batch`` / ``score_batch`` works on
the batch's Arrow columns; these tests run the same component through the
per-record fallback of the base class (and, for ROUGE-L, through the
``rouge-score`` package) and compare what each stores.
"""

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest
from rouge_score import rouge_scorer

from paths_compared import stored_rows, through_base
from realitycheck import Example, InvalidInputError, Label, Labeler, Response, RunStore, Score
from realitycheck.detectors import Detector, detectors
from realitycheck.labelers import labelers
from realitycheck.pipeline import detect, label
from realitycheck.pipeline._parts import _tally
from realitycheck.pipeline._report import outcome_of
from realitycheck.store import records_table
from realitycheck.store._columns import scrubbed_table
from realitycheck.store._secrets import Scrubber

_TEXTS = [
    "The sun rises in the east.",
    "",
    "?!",
    "Paris is the capital of France, and it is large.",
    "I have no comment.",
    "Nope",
    "Ünïcode wörds and digits 42",
]


def _run(tmp_path, name: str) -> RunStore:
    """A run of toy examples (one without references, one with a wordless reference)."""
    store = RunStore(tmp_path / name)
    refs = {0: (), 1: ("The sun rises in the east", "East"), 2: ("...",), 3: ("Paris", "France")}
    store.append(
        [
            Example(example_id=f"e{i}", dataset="toy", task="qa", references=r)
            for i, r in refs.items()
        ]
    )
    store.append(
        [
            Response(response_id=f"r{i}", example_id=f"e{i % 4}", model="m", text=t)
            for i, t in enumerate(_TEXTS * 3)
        ]
    )
    return store


def _per_record(component):
    """The same component (same key and spec), through the base class's per-record path."""
    if isinstance(component, Labeler):
        return through_base(component, Labeler, "label_batch")
    return through_base(component, Detector, "score_batch")


def _stored(store: RunStore, table: str) -> list[dict]:
    return stored_rows(store, table)


@pytest.mark.parametrize("key", ["rouge_l", "rouge_l[use_stemmer=true,threshold=0.5]"])
@pytest.mark.parametrize("batch_size", [None, 4])
def test_rouge_l_from_columns_stores_what_the_record_path_stores(tmp_path, key, batch_size):
    columnar = labelers.create_from_key(key)
    per_record = _per_record(columnar)
    a, b = _run(tmp_path, "a"), _run(tmp_path, "b")
    got = label(a, [columnar], batch_size=batch_size)
    want = label(b, [per_record], batch_size=batch_size)
    assert got.computed == want.computed and got.missing == want.missing
    assert got.missing_why == want.missing_why and got.skipped == want.skipped
    assert _stored(a, "labels") == _stored(b, "labels")
    assert got.computed[columnar.key] == 15  # e0's responses have no reference: not labelled


def test_rouge_l_from_columns_equals_rouge_score(tmp_path):
    store = _run(tmp_path, "run")
    label(store, [labelers.create_from_key("rouge_l")])
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    refs = {1: ["The sun rises in the east", "East"], 2: ["..."], 3: ["Paris", "France"]}
    by_id = {r["response_id"]: r for r in _stored(store, "labels")}
    for i, text in enumerate(_TEXTS * 3):
        if i % 4 == 0:
            assert f"r{i}" not in by_id
            continue
        row = by_id[f"r{i}"]
        f1 = max(scorer.score(r, text)["rougeL"].fmeasure for r in refs[i % 4])
        if row["hallucinated"] is None:
            assert row["error"] and row["score"] is None and f1 == 0.0
        else:
            assert row["score"] == pytest.approx(1.0 - f1, abs=1e-12)
            assert row["hallucinated"] == (f1 < 0.3)
            assert row["raw"] == f"rouge_l_f1={f1:.4f}"


@pytest.mark.parametrize("unit", ["chars", "words"])
def test_length_from_columns_stores_what_the_record_path_stores(tmp_path, unit):
    columnar = detectors.create_from_key(f"length[unit={unit}]")
    a, b = _run(tmp_path, "a"), _run(tmp_path, "b")
    detect(a, [columnar], batch_size=5)
    detect(b, [_per_record(columnar)], batch_size=5)
    assert _stored(a, "scores") == _stored(b, "scores")
    values = [r["value"] for r in _stored(a, "scores")]
    texts = {f"r{i}": t for i, t in enumerate(_TEXTS * 3)}
    expected = [
        float(len(t) if unit == "chars" else len(t.split()))
        for _, t in sorted(texts.items(), key=lambda kv: kv[0])
    ]
    assert values == expected


def _random_labels(rng, n):
    out = []
    for i in range(n):
        kind = rng.integers(4)
        error = "" if kind < 2 else f"error {rng.integers(3)}"
        out.append(
            Label(
                response_id=f"r{i}",
                labeler="x",
                hallucinated=None if kind >= 2 or kind == 1 else bool(rng.integers(2)),
                category="refuse" if kind == 1 and rng.integers(2) else "",
                error=error,
                retryable=bool(kind == 3),
            )
        )
    return out


def _random_scores(rng, n):
    out = []
    for i in range(n):
        kind = rng.integers(3)
        out.append(
            Score(
                response_id=f"r{i}",
                detector="d",
                value=float(rng.random()) if kind == 0 else None,
                error="" if kind == 0 else f"bad {rng.integers(2)}",
                retryable=bool(kind == 2),
            )
        )
    return out


@pytest.mark.parametrize("seed", range(5))
def test_the_tally_of_a_part_counts_the_outcomes_of_its_records(seed):
    rng = np.random.default_rng(seed)
    for records in (_random_labels(rng, 40), _random_scores(rng, 40)):
        tally = _tally(records_table(records))
        outcomes = [outcome_of(r) for r in records]
        assert tally.n == len(records)
        for outcome in ("missing", "failed"):
            assert tally.outcomes.get(outcome, 0) == outcomes.count(outcome)
        first = next(
            (r.error for r, o in zip(records, outcomes, strict=True) if o == "missing" and r.error),
            "",
        )
        assert tally.missing_why == first


_HOSTILE = [
    "plain text",
    "key=AbCdEfGh12345678ZyXwVu",
    "Authorization: Bearer abc.def-ghi_jkl",
    "sk-proj-1234567890abcdef",
    "",
    "token: short",
    "the configured secret s3cr3t-Value-XYZ appears here",
    "=HYPERLINK('x')",
]


@pytest.mark.parametrize("configured", [False, True])
def test_column_scrubbing_equals_scrubbing_each_text(monkeypatch, configured):
    if configured:
        monkeypatch.setenv("MY_SERVICE_API_KEY", "s3cr3t-Value-XYZ")
    else:
        monkeypatch.delenv("MY_SERVICE_API_KEY", raising=False)
    scrubber = Scrubber()
    labels = [
        Label(response_id=f"r{i} {t}", labeler="x", hallucinated=None, raw=t, error=t, spec=t)
        for i, t in enumerate(_HOSTILE)
    ]
    table = scrubbed_table(records_table(labels), "labels")
    full = [scrubber.text(t) for t in _HOSTILE]
    assert table.column("raw").to_pylist() == full
    assert table.column("error").to_pylist() == full
    assert table.column("spec").to_pylist() == full
    ids = [scrubber.configured(f"r{i} {t}") for i, t in enumerate(_HOSTILE)]
    assert table.column("response_id").to_pylist() == ids
    assert ("<redacted>" in str(ids)) == configured
    examples = [Example(example_id="e", dataset="d", task="qa", references=tuple(_HOSTILE))]
    refs = scrubbed_table(records_table(examples), "examples").column("references")
    assert refs.to_pylist() == [[scrubber.configured(t) for t in _HOSTILE]]


@pytest.mark.parametrize("seed", range(4))
def test_arrow_keeps_the_newest_row_of_each_key_like_pandas(tmp_path, seed):
    rng = np.random.default_rng(seed)
    store = RunStore(tmp_path)
    for _ in range(4):
        ids = rng.integers(0, 12, size=8)
        store.append(
            [
                Label(response_id=f"r{i}", labeler=f"l{rng.integers(2)}", hallucinated=True)
                for i in ids
            ]
        )
    frame = store.frame("labels")  # pandas drop_duplicates(keep="last")
    got = store.arrow("labels")
    assert got.column("response_id").to_pylist() == frame["response_id"].tolist()
    assert got.column("labeler").to_pylist() == frame["labeler"].tolist()
    store.compact("labels")
    assert store.arrow("labels").to_pylist() == got.to_pylist()


@dataclass(frozen=True, kw_only=True)
class _Counted(Labeler):
    batch_rows = 4

    def label(self, responses, examples, *, cache=None):
        SIZES.append(len(responses))
        return [self._label(r, False) for r in responses]


_Counted.name = "counted"
SIZES: list = []


def test_parts_hold_the_components_batch_rows_unless_the_stage_is_told(tmp_path):
    SIZES.clear()
    label(_run(tmp_path, "a"), [_Counted()])
    assert SIZES == [4, 4, 4, 4, 4, 1]
    SIZES.clear()
    label(_run(tmp_path, "b"), [_Counted()], batch_size=7)
    assert SIZES == [7, 7, 7]
    with pytest.raises(InvalidInputError, match="'batch_size' parameter of label must be"):
        label(_run(tmp_path, "c"), [_Counted()], batch_size=0)


@dataclass(frozen=True, kw_only=True)
class _Short(Labeler):
    def label_batch(self, batch, *, cache=None):
        return records_table([self._label(r, False) for r in batch.records()[:-1]])


_Short.name = "short"


def test_a_columnar_component_that_drops_a_row_is_refused_before_its_part_is_written(tmp_path):
    store = _run(tmp_path, "a")
    with pytest.raises(InvalidInputError, match="short returned 20 records for 21 responses"):
        label(store, [_Short()])
    assert store.arrow("labels").num_rows == 0
    assert isinstance(store.arrow("labels"), pa.Table)


def test_a_part_with_a_key_twice_reads_and_compacts_to_its_newest_row(tmp_path):
    store = RunStore(tmp_path)
    first = Label(response_id="r", labeler="a", hallucinated=True)
    second = Label(response_id="r", labeler="a", hallucinated=False)
    store.append([first, second, Label(response_id="s", labeler="a", hallucinated=True)])
    frame = store.frame("labels")  # pandas drop_duplicates(keep="last")
    expected = list(zip(frame["response_id"], frame["hallucinated"], strict=True))
    assert expected == [("r", False), ("s", True)]

    def stored():
        got = store.arrow("labels")
        ids, verdicts = got.column("response_id"), got.column("hallucinated")
        return list(zip(ids.to_pylist(), verdicts.to_pylist(), strict=True))

    assert stored() == expected
    store.compact("labels")
    assert stored() == expected
    alone = RunStore(tmp_path / "alone")
    alone.append([first])
    alone.compact("labels")
    assert not (tmp_path / "alone" / "labels.parts").exists() or not any(
        (tmp_path / "alone" / "labels.parts").iterdir()
    )
    assert alone.read(Label) == [first]
