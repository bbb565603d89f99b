"""Records as Arrow columns: a batch of responses to judge, and the labels or scores it gets.

A label or detect stage hands each component one :class:`ResponseBatch`: the
batch's rows of the run's responses table and, aligned with them, its
examples' columns, with no Python object per row. A component that can work
on columns reads them (texts, references) as arrays and returns its labels or
scores as one table, built by :func:`label_table` or :func:`score_table`; any
other component asks the batch for :meth:`ResponseBatch.records` and works on
records, as it always has.

:func:`records_table` turns records into the same table, and
:func:`scrubbed_table` removes secrets from a table's texts column by column,
each distinct text once (see :mod:`._secrets`); the store writes every part
through both.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from realitycheck.records import (
    AgreementResult,
    Example,
    Label,
    MetricResult,
    Record,
    Response,
    Score,
    records_from_columns,
    records_to_columns,
)
from realitycheck.store._arrays import from_numpy, from_texts, to_numpy
from realitycheck.store._secrets import TRIGGER_RE2, Scrubber

__all__ = [
    "ResponseBatch",
    "arrow_column",
    "label_table",
    "record_schema",
    "records_table",
    "score_table",
    "scrubbed_table",
]

_ARROW_TYPES = {
    "str": pa.string(),
    "bool": pa.bool_(),
    "bool | None": pa.bool_(),
    "float | None": pa.float64(),
    "float": pa.float64(),
    "int": pa.int64(),
    "tuple[str, ...]": pa.list_(pa.string()),
    "Mapping[str, Any]": pa.string(),
}
_RECORD_TYPES: dict[str, type[Any]] = {
    cls.table: cls for cls in (Example, Response, Label, Score, MetricResult, AgreementResult)
}


def record_schema(cls: type[Any]) -> pa.Schema:
    """Return the Arrow schema of a record type (mappings are stored as JSON text)."""
    return pa.schema([(f.name, _ARROW_TYPES[str(f.type)]) for f in dataclasses.fields(cls)])


class ResponseBatch:
    """One batch of a stage's responses as Arrow columns, with their examples.

    Args:
        responses: The batch's rows of the run's responses table, in order.
        examples: The run's examples table.
        example_rows: For each response, the row of its example in ``examples``.
        example_records: The run's examples as records by id, for components
            that work on records (built on lookup).
    """

    def __init__(
        self,
        responses: pa.Table,
        examples: pa.Table,
        example_rows: np.ndarray,
        example_records: Mapping[str, Example],
    ) -> None:
        self.responses = responses
        self.examples = example_records
        self._example_table = examples
        self._rows = np.asarray(example_rows, dtype=np.int64)
        self._example_rows = from_numpy(self._rows)

    def __len__(self) -> int:
        return self.responses.num_rows

    def column(self, name: str) -> pa.ChunkedArray:
        """Return the responses' column ``name`` (``response_id``, ``text``, ``samples`` …)."""
        return self.responses.column(name)

    def example_column(self, name: str) -> pa.ChunkedArray:
        """Return the column ``name`` of each response's example (``references``, ``context`` …)."""
        return self._example_table.column(name).take(self._example_rows)

    def example_values(self, name: str) -> list[Any]:
        """Return the value of ``name`` of each response's example, as Python values.

        Each distinct example's value is converted once and shared by its
        responses (many responses answer one question).
        """
        distinct, which = np.unique(self._rows, return_inverse=True)
        values = self._example_table.column(name).take(from_numpy(distinct)).to_pylist()
        return [values[k] for k in which.reshape(-1).tolist()]

    def records(self) -> list[Response]:
        """Return the batch's responses as records (their examples are in :attr:`examples`)."""
        columns = {n: self.responses.column(n).to_pylist() for n in self.responses.column_names}
        build = getattr(self.examples, "build", None)
        if build is not None:
            build(columns["example_id"])
        return records_from_columns(Response, columns)


def _strings(values: Any, n: int) -> pa.Array:
    """A string column of ``n`` rows: one text repeated, or a sequence of texts."""
    if isinstance(values, str):
        return from_texts([values] * n)
    return from_texts(values)


def _counts(values: np.ndarray | None, n: int) -> pa.Array:
    """An int64 column of ``n`` counts (zeros when ``values`` is ``None``)."""
    if values is None:
        return from_numpy(np.zeros(n, dtype=np.int64))
    counts = np.asarray(values, dtype=np.int64)
    if counts.shape != (n,) or (counts < 0).any():
        raise ValueError(f"unreadable must be {n} counts >= 0. Got shape {counts.shape} instead.")
    return from_numpy(counts)


def label_table(
    labeler: str,
    spec: str,
    response_ids: pa.ChunkedArray | pa.Array,
    *,
    hallucinated: np.ndarray,
    decided: np.ndarray,
    score: np.ndarray | None = None,
    category: Sequence[str] | str = "",
    raw: Sequence[str] | str = "",
    error: Sequence[str] | str = "",
    unreadable: np.ndarray | None = None,
) -> pa.Table:
    """The labels of one labeler as a table of the labels schema, one row per response.

    Args:
        labeler: The labeler's key, on every row.
        spec: JSON of its spec, on every row.
        response_ids: The labelled responses, in order.
        hallucinated: The verdicts (bool array); read only where ``decided``.
        decided: Where a verdict was reached; elsewhere ``hallucinated`` and
            ``score`` are null (no label, its ``error`` says why).
        score: Continuous evidence, higher = more likely hallucinated; null
            where not ``decided``.
        category: The finer verdict; one text per response, or one for all.
        raw: What the verdict was read from; one text per response, or one for all.
        error: Why a label has no verdict (empty where it has one); per response or one.
        unreadable: How many replies per response could not be read (default: none).

    Every label is ``retryable=False`` and ``failed=False``: a columnar
    labeler's errors are permanent (no reference, no word); one whose errors
    may pass on a retry (a judge) works on records.
    """
    n = len(response_ids)
    decided = np.asarray(decided, dtype=bool)
    columns = {
        "response_id": response_ids,
        "labeler": _strings(labeler, n),
        "hallucinated": from_numpy(np.asarray(hallucinated, dtype=bool), decided),
        "score": pa.nulls(n, pa.float64())
        if score is None
        else from_numpy(np.asarray(score, dtype=np.float64), decided),
        "category": _strings(category, n),
        "raw": _strings(raw, n),
        "error": _strings(error, n),
        "retryable": from_numpy(np.zeros(n, dtype=bool)),
        "failed": from_numpy(np.zeros(n, dtype=bool)),
        "unreadable": _counts(unreadable, n),
        "spec": _strings(spec, n),
    }
    return pa.Table.from_arrays(list(columns.values()), schema=record_schema(Label))


def score_table(
    detector: str,
    spec: str,
    response_ids: pa.ChunkedArray | pa.Array,
    *,
    value: np.ndarray,
    present: np.ndarray | None = None,
    error: Sequence[str] | str = "",
    unreadable: np.ndarray | None = None,
) -> pa.Table:
    """The scores of one detector as a table of the scores schema, one row per response.

    Args:
        detector: The detector's key, on every row.
        spec: JSON of its spec, on every row.
        response_ids: The scored responses, in order.
        value: The values, higher = more likely hallucinated; null where not ``present``.
        present: Where a value was obtained (default: everywhere).
        error: One text per response, or one text for all.
        unreadable: How many replies per response could not be read (default: none).

    Every score is ``retryable=False`` and ``failed=False`` (see :func:`label_table`).
    """
    n = len(response_ids)
    columns = {
        "response_id": response_ids,
        "detector": _strings(detector, n),
        "value": from_numpy(np.asarray(value, dtype=np.float64), present),
        "error": _strings(error, n),
        "retryable": from_numpy(np.zeros(n, dtype=bool)),
        "failed": from_numpy(np.zeros(n, dtype=bool)),
        "unreadable": _counts(unreadable, n),
        "spec": _strings(spec, n),
    }
    return pa.Table.from_arrays(list(columns.values()), schema=record_schema(Score))


def records_table(records: Sequence[Record]) -> pa.Table:
    """Records of one type as a table of their schema (mappings become JSON text).

    The table ``pa.Table.from_pydict`` gives, built column by column from
    buffers (:mod:`._arrays`); a value of the wrong type gets pyarrow's own error.
    """
    schema = record_schema(type(records[0]))
    columns = records_to_columns(records)
    try:
        arrays = [arrow_column(columns[f.name], f.type) for f in schema]
    except (AttributeError, TypeError, ValueError):
        return pa.Table.from_pydict(columns, schema=schema)
    return pa.Table.from_arrays(arrays, schema=schema)


def arrow_column(values: list[Any], kind: pa.DataType) -> pa.Array:
    """One column of :func:`records_table` (texts, optional bools or floats, ints, text lists)."""
    if kind == pa.string():
        return from_texts(values)
    if kind == pa.list_(pa.string()):
        lengths = np.fromiter(map(len, values), np.int64, len(values))
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        flat = from_texts([t for texts in values for t in texts])
        return pa.ListArray.from_arrays(from_numpy(offsets), flat)
    valid = np.fromiter((v is not None for v in values), bool, len(values))
    if kind == pa.bool_():
        if not all(v is None or isinstance(v, bool) for v in values):
            raise TypeError("not a bool")
        return from_numpy(np.array([v is True for v in values]), valid)
    if kind == pa.float64():
        if not all(v is None or isinstance(v, int | float) for v in values):
            raise TypeError("not a float")
        data = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        return from_numpy(data, valid)
    if kind == pa.int64() and all(type(v) is int for v in values):
        return from_numpy(np.array(values, dtype=np.int64))
    raise TypeError(f"no buffer conversion for {kind}")


_SCRUBBED_IN_FULL = ("error", "raw", "meta", "spec")


def scrubbed_table(table: pa.Table, table_name: str) -> pa.Table:
    """``table`` with secrets scrubbed from every text column (each distinct text once).

    Errors, raw replies, meta and specs lose configured keys and key-shaped
    strings; other texts (model outputs, dataset fields) lose configured keys
    only, and are left as they are when no key is configured.
    """
    scrubber = Scrubber()
    kind = _RECORD_TYPES.get(table_name.split(".")[0], MetricResult)
    for f in dataclasses.fields(kind):
        if f.name not in table.column_names:
            continue
        full = f.name in _SCRUBBED_IN_FULL
        if not full and not scrubber.has_configured:
            continue
        column = table.column(f.name)
        if pa.types.is_string(column.type):
            clean = _scrubbed_texts(column, scrubber, full=full)
        elif pa.types.is_list(column.type):
            clean = _scrubbed_lists(column, scrubber, full=full)
        else:
            continue
        if clean is not column:
            table = table.set_column(table.schema.get_field_index(f.name), f.name, clean)
    return table


def _scrubbed_texts(column: pa.ChunkedArray, scrubber: Scrubber, *, full: bool) -> Any:
    """A string column with secrets scrubbed, or ``column`` itself when no text changes.

    Each distinct text is read once, and only the texts that could hold a
    secret (:func:`_may_hold_secrets`, found by Arrow's string kernels) are
    scrubbed in Python.
    """
    encoded = column.combine_chunks().dictionary_encode()
    hit = np.flatnonzero(_may_hold_secrets(encoded.dictionary, scrubber, full=full))
    if not len(hit):
        return column
    clean = scrubber.text if full else scrubber.configured
    texts = encoded.dictionary.to_pylist()
    changed = False
    for i in hit:
        after = clean(texts[i])
        changed = changed or after != texts[i]
        texts[i] = after
    if not changed:
        return column
    return from_texts(texts).take(encoded.indices)


def _may_hold_secrets(texts: pa.Array, scrubber: Scrubber, *, full: bool) -> np.ndarray:
    """Whether each text holds one of a configured key's 8-grams, or (``full``) a key shape's start.

    A text with neither is left as it is by :meth:`Scrubber.text` (and one
    without a gram by :meth:`Scrubber.configured`), so only the others need it.
    """
    found = (
        pc.match_substring_regex(texts, TRIGGER_RE2, ignore_case=True)
        if full
        else pa.nulls(len(texts), pa.bool_())
    )
    if scrubber.grams:
        grams = pc.match_substring_regex(texts, _any_of(scrubber.grams))
        found = pc.or_kleene(found, grams)
    return to_numpy(found, fill=False).astype(bool)


@functools.lru_cache(maxsize=4)
def _any_of(literals: frozenset[str]) -> str:
    r"""An RE2 pattern matching any of ``literals`` (one pass, not one per literal).

    Every character but an ASCII letter or digit is written as its code point
    (``\x{..}``), which RE2 reads as that very character.
    """
    return "|".join(
        "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):x}}}" for c in literal)
        for literal in sorted(literals)
    )


def _scrubbed_lists(column: pa.ChunkedArray, scrubber: Scrubber, *, full: bool) -> Any:
    """A list-of-strings column with secrets scrubbed in each element (configured keys set).

    The elements are scrubbed as one flat string column, so each distinct text
    is read once and no list becomes Python objects; the lists are rebuilt
    from their lengths around the scrubbed texts.
    """
    lists = column.combine_chunks()
    texts = pa.chunked_array([pc.list_flatten(lists)])
    clean = _scrubbed_texts(texts, scrubber, full=full)
    if clean is texts:
        return column
    lengths = to_numpy(pc.list_value_length(lists), fill=0)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(
        np.int64 if pa.types.is_large_list(lists.type) else np.int32
    )
    values = (clean if isinstance(clean, pa.Array) else clean.combine_chunks()).cast(
        lists.type.value_type
    )
    mask = lists.is_null() if lists.null_count else None
    rebuilt = type(lists).from_arrays(from_numpy(offsets), values, mask=mask)
    return pa.chunked_array([rebuilt], lists.type)
