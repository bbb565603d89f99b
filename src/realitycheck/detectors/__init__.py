"""Built-in detectors; one module per component family.

Each module registers its components with a decorator; the registry imports
the modules when it is first asked for a name.
"""

from realitycheck.detectors._base import Detector, Needs, detector, detectors

__all__ = ["Detector", "Needs", "detector", "detectors"]
