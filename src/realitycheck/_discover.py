"""Import every public submodule of a component package so its decorators run."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable

__all__ = ["import_submodules"]


def import_submodules(package: str, path: Iterable[str]) -> None:
    """Import each submodule of ``package`` whose name does not start with ``_``.

    Submodules must import heavy dependencies (torch, transformers) inside the
    functions that use them, so this stays cheap.
    """
    for info in pkgutil.iter_modules(path):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
