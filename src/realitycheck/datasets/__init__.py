"""Built-in datasets; one module per component family.

Each module registers its components with a decorator; the registry imports
the modules when it is first asked for a name. :class:`TableBundle` (a
dataset's records as Arrow tables) loads on first use, so importing the
registry stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from realitycheck.datasets._base import Dataset, dataset, datasets
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._describe import describe
from realitycheck.datasets._io import TOO_DEEP, IdMaker, spec_json
from realitycheck.datasets._json_records import KEY_COLUMN
from realitycheck.datasets._sources import SOURCES, Source, fetch, verify
from realitycheck.datasets._tables import (
    DELIMITERS,
    FORMATS,
    cell_text,
    delimiter_hint,
    format_of,
    read_rows,
)
from realitycheck.registry import lazy_names

if TYPE_CHECKING:  # pragma: no cover - the lazy name below, for type checkers
    from realitycheck.datasets._table_bundle import TableBundle

__all__ = [
    "Bundle",
    "DELIMITERS",
    "Dataset",
    "FORMATS",
    "IdMaker",
    "KEY_COLUMN",
    "SOURCES",
    "Source",
    "TOO_DEEP",
    "TableBundle",
    "cell_text",
    "dataset",
    "datasets",
    "delimiter_hint",
    "describe",
    "fetch",
    "format_of",
    "read_rows",
    "spec_json",
    "verify",
]


# TableBundle loads pyarrow and the store; importing the registry stays cheap.
__getattr__, __dir__ = lazy_names(__name__, {"TableBundle": "_table_bundle"}, globals())
