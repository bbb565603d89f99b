"""The slices evaluate measures on: all, per task, per model, per named column.

Besides ``all``, a dataset's rows are measured per ``task`` and per ``model``
whenever the dataset has two or more of them. ``slice_by`` names more columns,
each adding one slice per value, ``<column>=<value>`` (again only where a
dataset has two or more values):

- ``prompt_variant``, a response's own column: sliced only when named, since a
  prompt-sensitivity run can hold many variants and each would multiply every
  metric row of the default report;
- ``task``, ``model`` and ``dataset`` are accepted and add nothing: the first
  two are sliced anyway, and every row already names its dataset;
- any other name is a column a ``files`` dataset declared with ``meta=``
  (kept in each response's ``meta["slice"]``). A declared column that shares
  a name above is read from the response's own column instead.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from realitycheck.errors import InvalidInputError, did_you_mean
from realitycheck.store import RunStore

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BUILT_IN_SLICES", "check_slice_by", "declared_columns", "slice_columns", "slices"]

BUILT_IN_SLICES = ("dataset", "model", "prompt_variant", "task")
"""Response columns ``slice_by`` accepts besides the columns a dataset declared."""

_ALWAYS = ("task", "model")
"""Columns sliced whenever a dataset has two or more values, named or not."""


def declared_columns(slice_by: tuple[str, ...]) -> tuple[str, ...]:
    """The names of ``slice_by`` that are declared ``meta`` columns, not built-in ones."""
    return tuple(c for c in slice_by if c not in BUILT_IN_SLICES)


def _slice_values(metas: pd.Series) -> list[dict[str, object]]:
    """Return each response's declared slice columns (``meta["slice"]``)."""
    return [
        dict((json.loads(m) if isinstance(m, str) and m else {}).get("slice") or {}) for m in metas
    ]


def check_slice_by(store: RunStore, slice_by: tuple[str, ...]) -> None:
    """Refuse, before any work, slice columns that are neither built in nor declared.

    Raises:
        InvalidInputError: With "Did you mean ...?" and the columns available.
    """
    if declared_columns(slice_by):
        metas = store.frame("responses", columns=["meta"])["meta"]
        _check_known(_slice_values(metas), slice_by)


def _check_known(values: list[dict[str, object]], slice_by: tuple[str, ...]) -> None:
    known = sorted({k for v in values for k in v} - set(BUILT_IN_SLICES))
    for column in declared_columns(slice_by):
        if column not in known:
            hint = did_you_mean(column, [*known, *BUILT_IN_SLICES])
            raise InvalidInputError(
                f"No response of the run has the slice column {column!r}.{hint} Available: "
                f"{', '.join(known) or 'none (declare columns with meta= of the files dataset)'}. "
                f"Built in: {', '.join(BUILT_IN_SLICES)}.",
                field="slice_by",
            )


def slice_columns(metas: pd.Series, slice_by: tuple[str, ...]) -> dict[str, pd.Series]:
    """Return ``slice:<column>`` -> each response's value of the declared slice columns.

    Built-in names of ``slice_by`` are left out (they are response columns).

    Raises:
        InvalidInputError: When no response declares a column of ``slice_by``.
    """
    import pandas as pd

    values = _slice_values(metas)
    _check_known(values, slice_by)
    return {
        f"slice:{c}": pd.Series([v.get(c) for v in values], index=metas.index, dtype=object)
        for c in declared_columns(slice_by)
    }


def slices(rows: pd.DataFrame) -> list[tuple[str, np.ndarray]]:
    """Return ``(name, mask)`` per slice: ``all``, then per task, model and named column.

    The named columns are ``prompt_variant`` (when ``rows`` has it, i.e. when
    it was named) and the declared ``slice:<column>`` columns. A column with
    fewer than two values adds no slice.
    """
    out = [("all", np.ones(len(rows), dtype=bool))]
    named = [(c, c) for c in ("prompt_variant",) if c in rows.columns]
    extra = [(c.removeprefix("slice:"), c) for c in rows.columns if c.startswith("slice:")]
    for name, column in [*((c, c) for c in _ALWAYS), *named, *extra]:
        values = sorted(rows[column].dropna().unique())
        if len(values) > 1:
            out.extend((f"{name}={v}", (rows[column] == v).to_numpy()) for v in values)
    return out
