"""Find the modules that register components: a package's submodules, and third-party plugins.

Both run once per family per process, when a registry is first asked for a
name (:meth:`realitycheck.registry.Registry.names`), never at import.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from importlib.metadata import EntryPoint

__all__ = ["import_submodules", "plugin_entry_points"]

_PREFIX = "realitycheck."


def import_submodules(package: str, path: Iterable[str]) -> None:
    """Import each submodule of ``package`` whose name does not start with ``_``.

    Submodules must import heavy dependencies (torch, transformers) inside the
    functions that use them, so this stays cheap.
    """
    for info in pkgutil.iter_modules(path):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")


def plugin_entry_points(family: str) -> tuple[EntryPoint, ...]:
    """The entry points of the group ``realitycheck.<family>`` in the installed packages.

    Every family is served by one scan of the installed distributions per
    process (a scan reads each package's metadata: about 10 ms, plus about
    45 ms to import :mod:`importlib.metadata` the first time). The scan is
    redone when :data:`sys.path` has changed since, as a plugin folder added
    to it must be seen.
    """
    return _scan(tuple(sys.path)).get(_PREFIX + family, ())


@functools.cache
def _scan(path: tuple[str, ...]) -> dict[str, tuple[EntryPoint, ...]]:
    """The ``realitycheck.*`` entry points by group, for the distributions on ``path``."""
    from importlib.metadata import entry_points  # not at import: it costs ~45 ms

    del path  # the cache key only: entry_points() reads sys.path itself
    found = entry_points()
    return {
        group: tuple(found.select(group=group))
        for group in sorted(found.groups)
        if group.startswith(_PREFIX)
    }
