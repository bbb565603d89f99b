"""Model factors for studies: each model's metadata as a table, and its base / tuned pairs.

The metadata comes from the run (:attr:`realitycheck.store.RunData.models`),
never from a model's name; a model without it is ``unknown``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from realitycheck.records.model_info import ModelInfo

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["UNKNOWN", "model_factor_table", "tuning_pairs"]

UNKNOWN = "unknown"


def model_factor_table(models: Iterable[str], info: Mapping[str, ModelInfo]) -> pd.DataFrame:
    """One row per model: ``model, family, size, instruction_tuned, decoding, has_metadata``.

    ``family``, ``instruction_tuned`` (``tuned`` / ``base``) and ``decoding`` are
    ``"unknown"`` where the metadata does not give them; ``size`` (parameters) is NaN.
    """
    import pandas as pd

    rows = []
    for model in sorted({str(m) for m in models}):
        known = info.get(model)
        tuned = None if known is None else known.instruction_tuned
        rows.append(
            {
                "model": model,
                "family": (known.family if known else None) or UNKNOWN,
                "size": known.size if known and known.size is not None else np.nan,
                "instruction_tuned": UNKNOWN if tuned is None else ("tuned" if tuned else "base"),
                "decoding": (known.decoding if known else None) or UNKNOWN,
                "has_metadata": known is not None,
            }
        )
    columns = ["model", "family", "size", "instruction_tuned", "decoding", "has_metadata"]
    return pd.DataFrame(rows, columns=columns)


def tuning_pairs(table: pd.DataFrame) -> list[tuple[str, float, str, str]]:
    """Return ``(family, size, base, tuned)`` for every base and tuned model of one family and size.

    ``table`` is a :func:`model_factor_table`; models of unknown family, size or
    tuning take part in no pair.
    """
    known = table[
        (table["family"] != UNKNOWN)
        & table["size"].notna()
        & (table["instruction_tuned"] != UNKNOWN)
    ]
    pairs = []
    for _, part in known.groupby(["family", "size"], sort=True):
        family, size = str(part["family"].iloc[0]), float(part["size"].iloc[0])
        bases = part.loc[part["instruction_tuned"] == "base", "model"]
        tuned = part.loc[part["instruction_tuned"] == "tuned", "model"]
        pairs += [(family, size, b, t) for b in bases for t in tuned]
    return pairs
