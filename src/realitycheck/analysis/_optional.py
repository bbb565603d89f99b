"""Import of the optional packages of the ``studies`` extra, inside the functions that use them."""

from __future__ import annotations

import importlib
from typing import Any

from realitycheck.errors import MissingDependencyError

__all__ = ["require_module"]


def require_module(module: str, package: str, purpose: str) -> Any:
    """The imported ``module``, or MissingDependencyError naming ``package`` and ``purpose``.

    Raises:
        MissingDependencyError: ``module`` cannot be imported (extra ``studies``).
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(package, extra="studies", purpose=purpose) from None
