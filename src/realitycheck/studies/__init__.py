"""Diagnostics over a run; each module registers its studies with a decorator."""

from realitycheck._discover import import_submodules
from realitycheck.studies._base import (
    RunData,
    Study,
    StudyFigure,
    StudyResult,
    StudyTable,
    studies,
    study,
)
from realitycheck.studies._store import load_results, save_result

__all__ = [
    "RunData",
    "Study",
    "StudyFigure",
    "StudyResult",
    "StudyTable",
    "load_results",
    "save_result",
    "studies",
    "study",
]

import_submodules(__name__, __path__)
