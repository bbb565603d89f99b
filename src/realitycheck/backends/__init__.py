"""Model backends behind one protocol; each module registers its backend with a decorator."""

from realitycheck._discover import import_submodules
from realitycheck.backends._base import (
    CAPABILITIES,
    DECODINGS,
    Backend,
    Generation,
    GenerationRequest,
    backend,
    backends,
    require,
)

__all__ = [
    "CAPABILITIES",
    "DECODINGS",
    "Backend",
    "Generation",
    "GenerationRequest",
    "backend",
    "backends",
    "require",
]

import_submodules(__name__, __path__)
