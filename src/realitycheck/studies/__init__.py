"""Diagnostics over a run, one study per module or subpackage.

Each study registers itself with the :func:`study` decorator; the registry
imports every public submodule (and subpackage) of this package when it is
first asked for a name. A study with parts is a subpackage holding them
(``label_noise/``: the study in ``__init__``, the simulation and the report in
private modules); statistics shared by several studies live in
:mod:`realitycheck.metrics` and :mod:`realitycheck.analysis`.

A study reads a run (:class:`realitycheck.store.RunData`) and returns a
:class:`realitycheck.store.StudyResult`; results are saved in the run by the
store. Studies import :class:`Study`, :func:`study` and the small helpers
below from this package, never from its private modules. The model-factor
helpers load numpy, so they load on first use and importing the registry
(the command line's ``--help``) stays cheap.

Figures are drawn with :mod:`realitycheck.studies.plots` (its layout, palette
and name fitting, PNG bytes without pyplot's global state), which the report
uses for its own figures; it registers no study and imports matplotlib on
first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from realitycheck.registry import lazy_names
from realitycheck.studies._base import Study, studies, study
from realitycheck.studies._retrieval import retrieval_ambiguity, retrieval_changes, retrieved_ids
from realitycheck.studies._tools import automatic_labelers, base_name, fmt, quiet

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from realitycheck.studies._models import UNKNOWN, model_factor_table, tuning_pairs

_LAZY = dict.fromkeys(("UNKNOWN", "model_factor_table", "tuning_pairs"), "_models")

__all__ = [
    "UNKNOWN",
    "Study",
    "automatic_labelers",
    "base_name",
    "fmt",
    "model_factor_table",
    "quiet",
    "retrieval_ambiguity",
    "retrieval_changes",
    "retrieved_ids",
    "studies",
    "study",
    "tuning_pairs",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
