"""Length statistics over sampled answers: Mean-Len and Std-Len (Janiak et al., 2025).

Janiak et al. show that the mean and the spread of the lengths of a model's
sampled answers rival elaborate uncertainty detectors on QA: hallucinated
answers tend to be longer and to vary more in length. Both read only
``response.samples``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from realitycheck.detectors._base import Detector, RunContext, detector
from realitycheck.detectors._features import sample_texts
from realitycheck.errors import MissingFeatureError
from realitycheck.params import OneOf, param
from realitycheck.records import Response, Score

__all__ = ["MeanLength", "StdLength"]

Unit = Literal["words", "chars"]


def _lengths(texts: Sequence[str], unit: str) -> np.ndarray:
    if unit == "chars":
        return np.array([len(t) for t in texts], dtype=np.float64)
    return np.array([len(t.split()) for t in texts], dtype=np.float64)


@dataclass(frozen=True, kw_only=True)
class _SampleLengths(Detector):
    """A statistic of the lengths of a response's sampled answers (not registered).

    Args:
        unit: ``words`` or ``chars``.
    """

    unit: Unit = param("words", OneOf(Unit))
    needs: ClassVar[frozenset[str]] = frozenset({"samples"})

    def _statistic(self, lengths: np.ndarray) -> float:
        raise NotImplementedError

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        out = []
        for response in responses:
            try:
                texts = sample_texts(response)
            except MissingFeatureError as exc:
                out.append(self._score(response, None, error=str(exc)))
                continue
            out.append(self._score(response, self._statistic(_lengths(texts, self.unit))))
        return out


@detector("mean_len")
@dataclass(frozen=True, kw_only=True)
class MeanLength(_SampleLengths):
    """Mean length of the sampled answers (Mean-Len).

    ``value = (1/K) sum_k len(s_k)``, the length in whitespace-separated
    words (``unit="words"``) or characters (``unit="chars"``). Higher =
    longer samples, which Janiak et al. find goes with hallucination. A
    response without samples gets ``value=None`` and an error.

    Args:
        unit: ``words`` or ``chars``.
    """

    def _statistic(self, lengths: np.ndarray) -> float:
        return float(lengths.mean())


@detector("std_len")
@dataclass(frozen=True, kw_only=True)
class StdLength(_SampleLengths):
    """Standard deviation of the lengths of the sampled answers (Std-Len).

    The population standard deviation (divisor ``K``, not ``K - 1``) of the
    samples' lengths in words or characters, so a single sample gives 0.
    Higher = the model's answers vary more in length = more likely
    hallucinated. A response without samples gets ``value=None``.

    Args:
        unit: ``words`` or ``chars``.
    """

    def _statistic(self, lengths: np.ndarray) -> float:
        return float(lengths.std(ddof=0))
