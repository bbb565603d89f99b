"""A dataset's records as Arrow tables: the columnar path from a loader into a run.

:meth:`Dataset.load` returns records (:class:`~realitycheck.datasets.Bundle`),
one Python object per example, response and label. Loading a run does not
need those objects: :meth:`Dataset.load_tables` returns a :class:`TableBundle`,
the four tables in the store's record schemas, ready to be written as parts.
Every dataset has it: by default it converts :meth:`Dataset.load`'s records
(:func:`TableBundle.of`); a loader with many rows builds its columns directly
with :func:`columns_table` and never makes a record per row. Both paths give
the same tables, row for row (tests/datasets/test_table_bundle.py checks every
dataset with local data).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from realitycheck.datasets._bundle import Bundle
from realitycheck.records import Example, Label, Response, Score
from realitycheck.store import (
    arrow_column,
    from_numpy,
    from_texts,
    record_schema,
    records_table,
)

__all__ = ["TableBundle", "columns_table", "meta_json"]

_JSON_FIELDS = ("meta", "features")
_TUPLE_FIELDS = ("references", "incorrect_references", "choices", "samples")

meta_json = json.JSONEncoder(sort_keys=True, default=str).encode
"""The JSON text of a mapping field (``meta``) as the store writes it (sorted keys)."""


def _empty(cls: type[Any]) -> pa.Table:
    """An empty table of record type ``cls`` (``Schema.empty_table`` would import pandas)."""
    schema = record_schema(cls)
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)


def _table_of(cls: type[Any], records: Sequence[Any]) -> pa.Table:
    """``records`` (of type ``cls``) as a table; an empty table of its schema when none."""
    if not records:
        return _empty(cls)
    return records_table(records)


@dataclass(frozen=True, kw_only=True)
class TableBundle:
    """Everything a dataset yields, as tables of the store's record schemas.

    Attributes:
        examples: Rows of the examples table.
        responses: Rows of the responses table (none for input-only data).
        labels: Rows of the labels table (human labels).
        scores: Rows of the scores table (recorded scores).
        notes: Plain-language statements of how the raw data was mapped.
    """

    examples: pa.Table
    responses: pa.Table = field(default_factory=lambda: _empty(Response))
    labels: pa.Table = field(default_factory=lambda: _empty(Label))
    scores: pa.Table = field(default_factory=lambda: _empty(Score))
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, bundle: Bundle) -> TableBundle:
        """The tables of a bundle of records (the default columnar path)."""
        return cls(
            examples=_table_of(Example, bundle.examples),
            responses=_table_of(Response, bundle.responses),
            labels=_table_of(Label, bundle.labels),
            scores=_table_of(Score, bundle.scores),
            notes=list(bundle.notes),
        )

    def with_example_meta(self, **extra: Any) -> TableBundle:
        """The same bundle, each example's meta with ``extra`` added (its keys win).

        The meta texts :data:`meta_json` gives for ``{**meta, **extra}``.
        """
        metas = [
            meta_json({**json.loads(m), **extra}) for m in self.examples.column("meta").to_pylist()
        ]
        index = self.examples.schema.get_field_index("meta")
        examples = self.examples.set_column(index, "meta", from_texts(metas))
        return dataclasses.replace(self, examples=examples)

    def tables(self) -> dict[str, pa.Table]:
        """The four tables by their store names (``examples``, ``responses``…)."""
        return {
            "examples": self.examples,
            "responses": self.responses,
            "labels": self.labels,
            "scores": self.scores,
        }


def columns_table(cls: type[Any], columns: Mapping[str, Sequence[Any]]) -> pa.Table:
    """A table of record type ``cls`` from one list of values per field, without records.

    The table :func:`~realitycheck.store.records_table` gives for the records
    ``cls(**row)`` of those columns: a field left out takes its default on every
    row, a mapping field (``meta``) becomes its JSON text (:data:`meta_json`), a
    tuple field a list of texts. A column may also be an Arrow array of the
    field's type, taken as it is (a mapping field's as JSON text). The records'
    own checks do not run: the caller builds valid values (its tests compare
    with the record path).

    Args:
        cls: The record type (:class:`~realitycheck.records.Response`, ``Label``…).
        columns: Values by field name, all of the same length.

    Raises:
        ValueError: When the columns differ in length or name no field of ``cls``.
        TypeError: When a list of bools, floats or ints holds a value of another type.
    """
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(columns) - names)
    lengths = {len(v) for v in columns.values()}
    if unknown or len(lengths) != 1:
        raise ValueError(f"columns_table({cls.__name__}): unknown {unknown}, lengths {lengths}")
    (n,) = lengths
    schema = record_schema(cls)
    arrays = [_array(f, columns.get(f.name), n, cls) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _default(cls: type[Any], name: str) -> Any:
    """The default of field ``name`` of ``cls``."""
    spec = cls.__dataclass_fields__[name]
    if spec.default_factory is not dataclasses.MISSING:
        return spec.default_factory()
    if spec.default is dataclasses.MISSING:
        raise ValueError(f"columns_table({cls.__name__}): the field {name!r} has no default")
    return spec.default


def _array(f: pa.Field, values: Sequence[Any] | None, n: int, cls: type[Any]) -> pa.Array:
    """One column: the given values, or the field's default on every row."""
    if isinstance(values, pa.Array | pa.ChunkedArray):
        return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if values is None:
        one = _array(f, [_default(cls, f.name)], 1, cls)
        return one.take(from_numpy(np.zeros(n, dtype=np.int64)))
    if f.name in _JSON_FIELDS:
        values = ["{}" if isinstance(v, dict) and not v else meta_json(v) for v in values]
    elif f.name in _TUPLE_FIELDS:
        values = [list(v) for v in values]
    return arrow_column(list(values), f.type)
