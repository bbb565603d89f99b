"""Built-in detectors; each module registers its components with a decorator."""

from realitycheck._discover import import_submodules
from realitycheck.detectors._base import Detector, Needs, detector, detectors

__all__ = ["Detector", "Needs", "detector", "detectors"]

import_submodules(__name__, __path__)
