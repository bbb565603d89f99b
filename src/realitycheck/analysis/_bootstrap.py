"""One set of bootstrap settings, shared by evaluate and every study."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from realitycheck.params import Interval, check_params, param

__all__ = ["Bootstrap"]


@dataclass(frozen=True, kw_only=True)
class Bootstrap:
    """How every confidence interval of a run is computed.

    A percentile bootstrap over responses: ``n_resamples`` resamples drawn with
    ``seed``, intervals covering ``confidence``. Everything measured on the
    same items shares the same resamples, so paired comparisons are fair.

    Above :data:`~realitycheck.metrics.LITTLE_BOOTSTRAP_ABOVE` items (524,288)
    evaluate's intervals come from the bag of little bootstraps instead
    (Kleiner et al. 2014; ``metrics._little_bootstrap``): the same seed and
    ``n_resamples``, shared out over 10 subsets of ``n ** 0.7`` items, in
    bounded work; each such row's note says so.

    Args:
        n_resamples: Resamples per interval (an int >= 1).
        confidence: Coverage of each interval, in (0, 1).
        seed: Seed of the resampling (an int >= 0).
    """

    n_resamples: int = param(1000, Interval(int, 1, None), doc="Bootstrap resamples.")
    confidence: float = param(0.95, Interval(float, 0, 1, closed="neither"), doc="CI coverage.")
    seed: int = param(0, Interval(int, 0, None), doc="Bootstrap seed.")

    def __post_init__(self) -> None:
        check_params(self)

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain JSON-able values (written to the manifest)."""
        return {"n_resamples": self.n_resamples, "confidence": self.confidence, "seed": self.seed}
