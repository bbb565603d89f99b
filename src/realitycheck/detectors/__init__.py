"""Built-in detectors; one module per component family.

Each module registers its components with a decorator; the registry imports
the modules when it is first asked for a name.
"""

from realitycheck.detectors._base import Detector, Needs, detector, detectors
from realitycheck.detectors._supervised import (
    MIN_TRAIN,
    SupervisedDetector,
    source_text,
    take,
    training_problem,
    weights_sha256,
)

__all__ = [
    "MIN_TRAIN",
    "Detector",
    "Needs",
    "SupervisedDetector",
    "detector",
    "detectors",
    "source_text",
    "take",
    "training_problem",
    "weights_sha256",
]
