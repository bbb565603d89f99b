"""The slices evaluate measures on: all, per task, per model, per declared metadata column.

A ``files`` dataset's ``meta`` columns are kept in each response's
``meta["slice"]``; ``slice_by`` names those that add slices ``<column>=<value>``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from realitycheck.errors import InvalidInputError, did_you_mean
from realitycheck.store import RunStore

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["check_slice_by", "slice_columns", "slices"]


def _slice_values(metas: pd.Series) -> list[dict[str, object]]:
    """Return each response's declared slice columns (``meta["slice"]``)."""
    return [
        dict((json.loads(m) if isinstance(m, str) and m else {}).get("slice") or {}) for m in metas
    ]


def check_slice_by(store: RunStore, slice_by: tuple[str, ...]) -> None:
    """Refuse, before any work, slice columns that no response of the run declares.

    Raises:
        InvalidInputError: With "Did you mean ...?" and the columns available.
    """
    if slice_by:
        metas = store.frame("responses", columns=["meta"])["meta"]
        _check_known(_slice_values(metas), slice_by)


def _check_known(values: list[dict[str, object]], slice_by: tuple[str, ...]) -> None:
    known = sorted({k for v in values for k in v})
    for column in slice_by:
        if column not in known:
            hint = did_you_mean(column, known)
            raise InvalidInputError(
                f"No response of the run has the slice column {column!r}.{hint} Available: "
                f"{', '.join(known) or 'none (declare columns with meta= of the files dataset)'}.",
                field="slice_by",
            )


def slice_columns(metas: pd.Series, slice_by: tuple[str, ...]) -> dict[str, pd.Series]:
    """Return ``slice:<column>`` -> each response's value of the declared slice columns.

    Raises:
        InvalidInputError: When no response declares a column of ``slice_by``.
    """
    import pandas as pd

    values = _slice_values(metas)
    _check_known(values, slice_by)
    return {
        f"slice:{c}": pd.Series([v.get(c) for v in values], index=metas.index, dtype=object)
        for c in slice_by
    }


def slices(rows: pd.DataFrame) -> list[tuple[str, np.ndarray]]:
    """Return ``(name, mask)`` per slice: ``all``, then per task, model and slice column.

    A column with fewer than two values adds no slice.
    """
    out = [("all", np.ones(len(rows), dtype=bool))]
    extra = [(c.removeprefix("slice:"), c) for c in rows.columns if c.startswith("slice:")]
    for name, column in [("task", "task"), ("model", "model"), *extra]:
        values = sorted(rows[column].dropna().unique())
        if len(values) > 1:
            out.extend((f"{name}={v}", (rows[column] == v).to_numpy()) for v in values)
    return out
