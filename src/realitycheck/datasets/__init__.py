"""Built-in datasets; each module registers its components with a decorator."""

from realitycheck._discover import import_submodules
from realitycheck.datasets._base import Bundle, Dataset, dataset, datasets
from realitycheck.datasets._describe import describe
from realitycheck.datasets._sources import SOURCES, Source, fetch, verify

__all__ = [
    "SOURCES",
    "Bundle",
    "Dataset",
    "Source",
    "dataset",
    "datasets",
    "describe",
    "fetch",
    "verify",
]

import_submodules(__name__, __path__)
