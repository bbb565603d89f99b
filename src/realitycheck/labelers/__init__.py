"""Built-in labelers; each module registers its components with a decorator."""

from realitycheck._discover import import_submodules
from realitycheck.labelers._base import Labeler, labeler, labelers

__all__ = ["Labeler", "labeler", "labelers"]

import_submodules(__name__, __path__)
