"""realitycheck: trustworthy evaluation of LLM hallucination detection.

Measure hallucination detectors, correctness labelers and LLM judges against
human labels with honest statistics, and write a report.

Positive class everywhere is *hallucinated*; every detector score is oriented so
that higher means more likely hallucinated.

Layers
------
Imports point down only; a package never imports another package's private
(``_name``) module, and what it shares is public in its ``__init__``. Both
rules are import-linter contracts in ``pyproject.toml``, checked by the test
command::

    cli            parse arguments, print; nothing else
    runner         RunConfig (TOML), the demo, ``run``, the one loop over studies
    report         HTML / Markdown / CSV from stored results
    studies        one diagnostic each; read a run, return tables, figures, a finding
    pipeline       stages: ingest, label, detect, evaluate   | generation | annotation
    components     labelers, detectors (a panel fits Dawid-Skene with analysis)
    analysis       splits, thresholds, Bootstrap settings, Measure, rater agreement | claims
    components     datasets, backends, retrievers
    store          run folder, Parquet parts, manifest, study results, secrets, locks
    metrics · plots · raters   (raters: Dawid-Skene, read by datasets and analysis)
    records · keys · registry · errors · text · verdicts   (depend on nothing above)

Attributes of this package are loaded on first use, so ``import realitycheck``
and the command line's ``--help`` stay fast; the registries (``datasets``,
``labelers``, ``detectors``, ``backends``, ``retrievers``, ``studies``) import their built-in
components when first asked for a name.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The registries are bound here, before anything can import their packages and
# bind the package under the same name; their modules are light.
from realitycheck.backends import backend, backends
from realitycheck.datasets import dataset, datasets
from realitycheck.detectors import detector, detectors
from realitycheck.labelers import labeler, labelers
from realitycheck.retrievers import retriever, retrievers
from realitycheck.studies import studies, study

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers and IDEs
    from realitycheck.analysis import Bootstrap
    from realitycheck.backends import Backend, Generation, GenerationRequest
    from realitycheck.datasets import Bundle, Dataset
    from realitycheck.detectors import Detector, Needs
    from realitycheck.errors import (
        BackendError,
        DataNotFoundError,
        FatalBackendError,
        InvalidInputError,
        MissingDependencyError,
        RealityCheckError,
        RetryableBackendError,
        UnknownComponentError,
    )
    from realitycheck.generation import SamplingPlan, generate, make_plan
    from realitycheck.labelers import Labeler
    from realitycheck.pipeline import Evaluation, EvaluationConfig, detect, evaluate, ingest, label
    from realitycheck.records import AgreementResult, Example, Label, MetricResult, Response, Score
    from realitycheck.registry import Component, Registry
    from realitycheck.report import ReportFiles, write_report
    from realitycheck.runner import load_run_config, run_config, run_demo, run_studies
    from realitycheck.store import RunData, RunStore, StudyResult
    from realitycheck.studies import Study

__version__ = "0.1.0"

_WHERE: dict[str, str] = {
    "Bootstrap": "analysis",
    **dict.fromkeys(("Backend", "Generation", "GenerationRequest"), "backends"),
    **dict.fromkeys(("Bundle", "Dataset"), "datasets"),
    **dict.fromkeys(("Detector", "Needs"), "detectors"),
    **dict.fromkeys(
        (
            "BackendError",
            "DataNotFoundError",
            "FatalBackendError",
            "InvalidInputError",
            "MissingDependencyError",
            "RealityCheckError",
            "RetryableBackendError",
            "UnknownComponentError",
        ),
        "errors",
    ),
    **dict.fromkeys(("SamplingPlan", "generate", "make_plan"), "generation"),
    "Labeler": "labelers",
    **dict.fromkeys(
        ("Evaluation", "EvaluationConfig", "detect", "evaluate", "ingest", "label"), "pipeline"
    ),
    **dict.fromkeys(
        ("AgreementResult", "Example", "Label", "MetricResult", "Response", "Score"), "records"
    ),
    **dict.fromkeys(("Component", "Registry"), "registry"),
    **dict.fromkeys(("ReportFiles", "write_report"), "report"),
    **dict.fromkeys(("load_run_config", "run_config", "run_demo", "run_studies"), "runner"),
    **dict.fromkeys(("RunData", "RunStore", "StudyResult"), "store"),
    "Study": "studies",
}

__all__ = [
    "AgreementResult",
    "Backend",
    "BackendError",
    "Bootstrap",
    "Bundle",
    "Component",
    "DataNotFoundError",
    "Dataset",
    "Detector",
    "Evaluation",
    "EvaluationConfig",
    "Example",
    "FatalBackendError",
    "Generation",
    "GenerationRequest",
    "InvalidInputError",
    "Label",
    "Labeler",
    "MetricResult",
    "MissingDependencyError",
    "Needs",
    "RealityCheckError",
    "Registry",
    "ReportFiles",
    "Response",
    "RetryableBackendError",
    "RunData",
    "RunStore",
    "SamplingPlan",
    "Score",
    "Study",
    "StudyResult",
    "UnknownComponentError",
    "__version__",
    "backend",
    "backends",
    "dataset",
    "datasets",
    "detect",
    "detector",
    "detectors",
    "evaluate",
    "generate",
    "ingest",
    "label",
    "labeler",
    "labelers",
    "load_run_config",
    "make_plan",
    "retriever",
    "retrievers",
    "run_config",
    "run_demo",
    "run_studies",
    "studies",
    "study",
    "write_report",
]


def __getattr__(name: str) -> Any:
    """Load a public attribute from the module that defines it, on first use."""
    home = _WHERE.get(name)
    if home is None:
        raise AttributeError(f"module 'realitycheck' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"realitycheck.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
