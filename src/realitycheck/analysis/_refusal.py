"""Which responses are refusals: too short to be an answer, or a stock refusal phrase."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # pragma: no cover - the caller passes a Series
    import pandas as pd

__all__ = ["refusal_mask"]


def refusal_mask(
    texts: pd.Series, max_words: int, phrases: Sequence[str] = ()
) -> npt.NDArray[np.bool_]:
    """Whether each response is a refusal.

    A refusal has at most ``max_words`` whitespace-separated words (the
    answer-rate rule of HHEM-style leaderboards), or contains one of
    ``phrases`` (case-insensitive substring).

    Args:
        texts: The responses' texts.
        max_words: Responses with at most this many words are refusals (0 =
            only empty ones).
        phrases: Phrases that mark a refusal wherever they occur.

    Returns:
        One bool per text, True = refusal.
    """
    words = texts.map(lambda t: len(str(t).split())).to_numpy()
    mask = words <= max_words
    if phrases:
        pattern = "|".join(re.escape(p.lower()) for p in phrases)
        mask |= texts.str.lower().str.contains(pattern, regex=True).to_numpy(dtype=bool)
    return np.asarray(mask, dtype=bool)
