"""Factor analysis of mixed data (FAMD) of many signals: fitted on one split, applied to any item.

Factor analysis of mixed data (Pagès, 2014) is a PCA of a table in which each
numeric column is standardised and each categorical column is one-hot coded,
each indicator centred and divided by the square root of its proportion. The
fit is done by ``prince.FAMD`` (``prince.PCA`` on standardised columns when the
signals are all numeric or all binary: for a two-category variable the FAMD
coding gives the same row geometry as its standardised 0/1 indicator, so the
two coincide). Items are then projected with the *fitted* statistics (means,
standard deviations, category proportions and the first right singular
vector), so an item's score does not depend on the other items scored with it
— ``prince.FAMD.row_coordinates`` re-estimates category proportions from the
rows it is given, which would let a test batch shape its own scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from realitycheck.analysis._optional import require_module

if TYPE_CHECKING:  # pragma: no cover - pandas is imported where a frame is built
    import pandas as pd

__all__ = ["FamdFit", "famd_scores", "fit_famd"]


@dataclass(frozen=True)
class FamdFit:
    """The first FAMD component, as fitted on the calibration items.

    Attributes:
        signals: The input columns, in order.
        binary: Those coded as categories (values 0/1).
        engine: ``"prince.FAMD"`` or ``"prince.PCA"`` (all numeric or all binary).
        coded: Coded column -> (signal, category or None for a numeric column).
        centre: Per coded column: the mean (numeric) or the proportion (category).
        scale: Per coded column: the standard deviation (ddof 0) or sqrt(proportion).
        direction: Per coded column: the first right singular vector (unit norm).
        eigenvalue: Variance of the first component on the fitted items.
        inertia_share: Its share of the total inertia, in [0, 1].
        contributions: Per signal: its share (in %) of the first component's
            inertia; they add up to 100.
        coordinates: Per coded column: prince's column coordinate on the first
            component (the correlation with it for a numeric column).
    """

    signals: tuple[str, ...]
    binary: tuple[str, ...]
    engine: str
    coded: dict[str, tuple[str, str | None]]
    centre: pd.Series
    scale: pd.Series
    direction: pd.Series
    eigenvalue: float
    inertia_share: float
    contributions: pd.Series
    coordinates: pd.Series


def _prince() -> object:
    return require_module("prince", "prince", "Factor analysis of mixed data (FAMD)")


def _code(frame: pd.DataFrame, fit: FamdFit) -> pd.DataFrame:
    """The coded (standardised / indicator) table of ``frame`` with the fitted statistics."""
    import pandas as pd

    columns = {}
    for name, (signal, category) in fit.coded.items():
        x = frame[signal].to_numpy(dtype=float)
        if category is not None:
            x = (x == float(category)).astype(float)
        columns[name] = (x - fit.centre[name]) / fit.scale[name]
    return pd.DataFrame(columns, index=frame.index)


def fit_famd(frame: pd.DataFrame, binary: Sequence[str]) -> FamdFit:
    """Fit FAMD on ``frame`` (rows = items, columns = signals, no missing values).

    Args:
        frame: One column per signal, at least 2 columns and 3 rows; no
            column may be constant.
        binary: Columns whose values are 0/1, coded as categories.

    Returns:
        The fitted first component.

    Raises:
        MissingDependencyError: prince is not installed.
    """
    import pandas as pd

    prince = _prince()
    signals = tuple(frame.columns)
    binary = tuple(c for c in signals if c in set(binary))
    numeric = [c for c in signals if c not in binary]
    x = frame.reset_index(drop=True).astype(float)
    coded: dict[str, tuple[str, str | None]] = {}
    if numeric and binary:
        model = prince.FAMD(n_components=2, engine="scipy", categorical_columns=list(binary))  # type: ignore[attr-defined]
        table = x[numeric].join(x[list(binary)].astype(int).astype(str))
        model.fit(table)
        coded.update({c: (c, None) for c in numeric})
        for c in model.one_hot_columns_:
            signal = next(b for b in binary if c.startswith(f"{b}_"))
            coded[c] = (signal, c[len(signal) + 1 :])
        engine = "prince.FAMD"
    else:
        model = prince.PCA(  # type: ignore[attr-defined]
            n_components=2, rescale_with_mean=True, rescale_with_std=True, engine="scipy"
        )
        model.fit(x)
        coded.update({c: (c, None) for c in signals})
        engine = "prince.PCA"
    centre, scale = {}, {}
    for name, (signal, category) in coded.items():
        values = x[signal].to_numpy()
        if category is None:
            centre[name], scale[name] = values.mean(), values.std()
        else:
            share = float(np.mean(values == float(category)))
            centre[name], scale[name] = share, np.sqrt(share)
    eigenvalue = float(model.eigenvalues_[0])
    coordinates = model.column_coordinates_[0].reindex(list(coded))
    squares = (coordinates**2).groupby([coded[c][0] for c in coordinates.index]).sum()
    return FamdFit(
        signals=signals, binary=binary, engine=engine, coded=coded,
        centre=pd.Series(centre), scale=pd.Series(scale),
        direction=coordinates / np.sqrt(eigenvalue), eigenvalue=eigenvalue,
        inertia_share=eigenvalue / float(model.total_inertia_),
        contributions=(100 * squares / squares.sum()).reindex(list(signals)),
        coordinates=coordinates,
    )  # fmt: skip


def famd_scores(fit: FamdFit, frame: pd.DataFrame) -> npt.NDArray[np.float64]:
    """First-component coordinates of the items of ``frame`` (no missing values).

    Each item is coded with the fitted statistics and projected on the fitted
    direction, so its score does not depend on the other rows of ``frame``.
    """
    coded = _code(frame, fit)
    return coded[list(fit.direction.index)].to_numpy() @ fit.direction.to_numpy()
