"""Detector outputs that a dataset's authors recorded with the data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from realitycheck.detectors._base import Detector, RunContext, detector
from realitycheck.params import NonEmptyStr, required
from realitycheck.records import Response, Score

__all__ = ["Recorded"]

PREFIX = "recorded:"


@detector("recorded")
@dataclass(frozen=True, kw_only=True)
class Recorded(Detector):
    """A score a dataset ships (e.g. FaithBench's HHEM or GPT-4 judgements).

    The dataset converts each recorded value to the shared orientation (higher
    = more likely hallucinated) when it is loaded and says how in its notes.
    Stored under ``recorded:<source>``.

    Args:
        source: The recorded detector's name in the dataset (``hhem-2.1``…).
    """

    source: str = required(NonEmptyStr())
    needs: ClassVar[frozenset[str]] = frozenset({"recorded"})

    @property
    def key(self) -> str:
        """``recorded:<source>``."""
        return f"{PREFIX}{self.source}"

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return the recorded score of each response; None with an error where absent."""
        out = []
        for r in responses:
            found = run.recorded.get((r.response_id, self.key))
            if found is None:
                out.append(self._score(r, None, error=f"the dataset records no {self.key}"))
            else:
                out.append(found)
        return out
