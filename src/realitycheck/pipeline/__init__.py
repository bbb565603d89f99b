"""The stages that fill and measure a run: ingest, label, detect, evaluate.

``evaluate`` and its settings are imported on first use, so that the label and
detect stages (and the command line that runs them) do not load pandas and the
evaluation code they never call.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from realitycheck.pipeline._checks import check_keys
from realitycheck.pipeline._proxy_model import PromptBuilder, ProxyModel
from realitycheck.pipeline._report import commonest_error
from realitycheck.pipeline._slices import BUILT_IN_SLICES, check_slice_by
from realitycheck.pipeline._stages import StageReport, detect, ingest, label

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from realitycheck.pipeline._evaluate import Evaluation, evaluate
    from realitycheck.pipeline._evaluate_config import EvaluationConfig

__all__ = [
    "BUILT_IN_SLICES",
    "Evaluation",
    "EvaluationConfig",
    "PromptBuilder",
    "ProxyModel",
    "StageReport",
    "check_keys",
    "check_slice_by",
    "commonest_error",
    "detect",
    "evaluate",
    "ingest",
    "label",
]

_LAZY = {
    "Evaluation": "realitycheck.pipeline._evaluate",
    "EvaluationConfig": "realitycheck.pipeline._evaluate_config",
    "evaluate": "realitycheck.pipeline._evaluate",
}


def __getattr__(name: str) -> Any:
    """Import the evaluation names on first use (PEP 562)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
