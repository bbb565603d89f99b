"""Built-in labelers; one module per component family.

Each module registers its components with a decorator; the registry imports
the modules when it is first asked for a name. The judges' shared parts
(:class:`Judge`, :func:`plan_calls`) load on first use, so importing the
registry stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from realitycheck.labelers._base import Labeler, labeler, labelers

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from realitycheck.labelers._dry_run import CallPlan, estimate_tokens, plan_calls
    from realitycheck.labelers._judge import Judge

__all__ = ["CallPlan", "Judge", "Labeler", "estimate_tokens", "labeler", "labelers", "plan_calls"]

_LAZY = {
    "CallPlan": "_dry_run",
    "estimate_tokens": "_dry_run",
    "plan_calls": "_dry_run",
    "Judge": "_judge",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
