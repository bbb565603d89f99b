"""One set of bootstrap settings, shared by evaluate and every study."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

from realitycheck.errors import InvalidInputError

__all__ = ["Bootstrap"]


@dataclass(frozen=True, kw_only=True)
class Bootstrap:
    """How every confidence interval of a run is computed.

    A percentile bootstrap over responses: ``n_resamples`` resamples drawn with
    ``seed``, intervals covering ``confidence``. Everything measured on the
    same items shares the same resamples, so paired comparisons are fair.

    Args:
        n_resamples: Resamples per interval (an int >= 1).
        confidence: Coverage of each interval, in (0, 1).
        seed: Seed of the resampling (an int >= 0).
    """

    n_resamples: int = 1000
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        _check(self.n_resamples, "n_resamples", "an int >= 1", _is_int(self.n_resamples, 1))
        _check(self.seed, "seed", "an int >= 0", _is_int(self.seed, 0))
        c = self.confidence
        real = isinstance(c, numbers.Real) and not isinstance(c, bool)
        _check(c, "confidence", "a float in (0, 1)", real and 0 < c < 1)

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain JSON-able values (written to the manifest)."""
        return {"n_resamples": self.n_resamples, "confidence": self.confidence, "seed": self.seed}


def _is_int(value: Any, low: int) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low


def _check(value: Any, name: str, expected: str, ok: bool) -> None:
    if not ok:
        raise InvalidInputError(
            f"The {name!r} parameter of Bootstrap must be {expected}. Got {value!r} instead."
        )
