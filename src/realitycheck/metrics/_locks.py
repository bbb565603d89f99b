"""A lock that survives pickling: dropped from the pickle, made anew on unpickling.

Objects shared between threads and also sent to other processes (a Ray
worker gets the driver's objects by pickle) guard their state with a
:class:`threading.Lock`, which cannot be pickled. :class:`LockedState` is the
one place that handles it, for :class:`~realitycheck.metrics.Resamples` and
:class:`~realitycheck.analysis.Measure`.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["LockedState"]


class LockedState:
    """Mixin: ``self._lock`` guards the instance's state and is not pickled.

    ``__init__`` makes the lock; pickling keeps every attribute but the lock,
    and unpickling makes a new, unlocked one, so the copy shares nothing with
    the original. A subclass calls ``super().__init__()`` in its own
    ``__init__``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Every attribute but the lock."""
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore the attributes and make a new lock."""
        self.__dict__.update(state)
        self._lock = threading.Lock()
