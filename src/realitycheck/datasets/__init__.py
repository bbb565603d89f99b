"""Built-in datasets; one module per component family.

Each module registers its components with a decorator; the registry imports
the modules when it is first asked for a name.
"""

from realitycheck.datasets._base import Bundle, Dataset, dataset, datasets
from realitycheck.datasets._describe import describe
from realitycheck.datasets._sources import SOURCES, Source, fetch, verify
from realitycheck.datasets._table_bundle import TableBundle

__all__ = [
    "SOURCES",
    "Bundle",
    "Dataset",
    "Source",
    "TableBundle",
    "dataset",
    "datasets",
    "describe",
    "fetch",
    "verify",
]
