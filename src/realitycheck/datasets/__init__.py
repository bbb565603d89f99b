"""Built-in datasets; each module registers its components with a decorator."""

from realitycheck._discover import import_submodules
from realitycheck.datasets._base import Bundle, Dataset, dataset, datasets

__all__ = ["Bundle", "Dataset", "dataset", "datasets"]

import_submodules(__name__, __path__)
