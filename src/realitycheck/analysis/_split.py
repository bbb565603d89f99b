"""The calibration/test split, by example, stable across runs.

An example belongs to the calibration split when the first byte of the
BLAKE2b hash of its ``example_id`` is below ``calibration_fraction`` × 256, so
all responses to one source fall on the same side and a rerun gives the same
split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

__all__ = ["CALIBRATION", "TEST", "split_of"]

CALIBRATION = "calibration"
TEST = "test"


def split_of(example_ids: Sequence[str], calibration_fraction: float = 0.5) -> np.ndarray:
    """Return ``"calibration"`` or ``"test"`` for each example id (stable across runs)."""
    cut = int(round(calibration_fraction * 256))
    first = np.array(
        [hashlib.blake2b(e.encode("utf-8"), digest_size=1).digest()[0] for e in example_ids]
    )
    return np.where(first < cut, CALIBRATION, TEST)
