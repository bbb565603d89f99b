"""Built-in detectors; one module per component family.

Each module registers its components with a decorator; the registry imports
the modules when it is first asked for a name. The protocol and the registry
(:class:`Detector`, :class:`RunContext`, :func:`detector`, :data:`detectors`) are
light; the supervised detectors' shared parts (:class:`SupervisedDetector`
and its helpers) load numpy, so they load on first use and importing the
registry (the command line's ``--help``) stays cheap.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from realitycheck.detectors._base import Detector, RunContext, detector, detectors
from realitycheck.registry import lazy_names

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from realitycheck.detectors._supervised import (
        MIN_TRAIN,
        SupervisedDetector,
        source_text,
        take,
        training_problem,
        weights_sha256,
    )

_LAZY = dict.fromkeys(
    (
        "MIN_TRAIN",
        "SupervisedDetector",
        "source_text",
        "take",
        "training_problem",
        "weights_sha256",
    ),
    "_supervised",
)

__all__ = [
    "MIN_TRAIN",
    "Detector",
    "RunContext",
    "SupervisedDetector",
    "detector",
    "detectors",
    "source_text",
    "take",
    "training_problem",
    "weights_sha256",
]


_load, __dir__ = lazy_names(__name__, _LAZY, globals())


def __getattr__(name: str) -> Any:
    if name == "Needs":  # RunContext's name before this release
        warnings.warn(
            "realitycheck.detectors.Needs is renamed RunContext; the old name will be removed "
            "in the next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        return RunContext
    return _load(name)
