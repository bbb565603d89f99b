"""Names a package loads from its own modules on first use (PEP 562)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, where: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a package's module ``__getattr__`` and ``__dir__`` for names loaded on first use.

    A package whose heavy names (numpy, pyarrow) would slow its import lists
    them in ``where`` and binds the two functions at its top::

        __getattr__, __dir__ = lazy_names(__name__, {"Bootstrap": "_bootstrap"}, globals())

    Args:
        package: The package's ``__name__``.
        where: Each lazily loaded name and the module of ``package`` that
            defines it, relative (``"_bootstrap"`` for ``package._bootstrap``).
        namespace: The package's ``globals()``: a loaded name is bound there,
            so it is imported once and then found without ``__getattr__``.

    Returns:
        ``(__getattr__, __dir__)``. The first imports the name's module and
        returns the name, or raises :class:`AttributeError` for a name not in
        ``where``; the second lists ``namespace`` and every name of ``where``,
        loaded or not.
    """

    def __getattr__(name: str) -> Any:
        home = where.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
