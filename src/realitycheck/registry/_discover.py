"""Find the modules that register components: a package's submodules, and third-party plugins.

A registry asked for one name imports only the built-in module whose source
declares it (:func:`declared_names`: ``@detector("length")`` at the start of a
line of ``detectors/length.py``); asked for every name, or for one no source
declares, it imports every public submodule (:func:`import_submodules`) and the
plugins (:func:`plugin_entry_points`). Nothing here runs at import.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from importlib.metadata import EntryPoint

__all__ = ["declared_names", "import_submodules", "plugin_entry_points"]

_PREFIX = "realitycheck."


def import_submodules(package: str, path: Iterable[str]) -> None:
    """Import each submodule of ``package`` whose name does not start with ``_``.

    Submodules must import heavy dependencies (torch, transformers) inside the
    functions that use them, so this stays cheap.
    """
    for info in pkgutil.iter_modules(path):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")


def declared_names(package: str, path: Iterable[str], decorator: str) -> dict[str, str]:
    """Map each name declared by ``@decorator("name")`` in a public submodule to that module.

    Read from the source text (a module ``m.py``, or a subpackage's
    ``m/__init__.py``) without importing anything: a few milliseconds for a
    family, against 50-100 ms to import every module. A declaration written
    otherwise (a variable as the name) is simply not in the map; the registry
    then imports every module, as it does for a name the map leads it to but
    the module does not register.
    """
    pattern = re.compile(rf'^@{re.escape(decorator)}\(\s*["\']([a-z][a-z0-9_]*)["\']\s*\)', re.M)
    out: dict[str, str] = {}
    for info in pkgutil.iter_modules(path):
        folder = getattr(info.module_finder, "path", None)
        if info.name.startswith("_") or not isinstance(folder, str):
            continue
        source = f"{folder}/{info.name}/__init__.py" if info.ispkg else f"{folder}/{info.name}.py"
        try:
            with open(source, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError):
            continue  # compiled-only or unreadable: found by the full import instead
        for name in pattern.findall(text):
            out.setdefault(name, f"{package}.{info.name}")
    return out


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
