"""realitycheck: trustworthy evaluation of LLM hallucination detection.

Measure hallucination detectors, correctness labelers and LLM judges against
human labels with honest statistics, and write a report.

Positive class everywhere is *hallucinated*; every detector score is oriented so
that higher means more likely hallucinated.

Layers
------
Imports point down only; no two sibling packages, at any depth, import each
other, directly or round a loop; and a package never imports another
package's private (``_name``) module: what it shares is public in its
``__init__``. The three rules are import-linter contracts in
``pyproject.toml``, checked by the test command::

    cli            parse arguments, print; nothing else
    runner         RunConfig (TOML), the demo, ``run``, the one loop over studies
    report         HTML / Markdown / CSV from stored results
    studies        one diagnostic each; read a run, return tables, figures, a finding
    pipeline       stages: ingest, generate, choose, label, detect, evaluate   | annotation
    generation     prompts, sampling and choice plans, prompt variants: what to ask
    components     labelers, detectors (a panel fits Dawid-Skene with analysis)
    analysis       splits, thresholds, Bootstrap settings, Measure, rater agreement | claims
    components     datasets, backends, retrievers
    encoders       local text encoders: MiniLM sentence embeddings, BERTScore
    store          run folder, Parquet parts, manifest, study results, secrets, locks
    metrics · raters   (raters: Dawid-Skene, read by datasets and analysis)
    records (with keys, model_info) · text · verdicts · progress · executors
    registry
    params (with toml_lines)
    errors         (each depends on nothing above it)

Attributes of this package are loaded on first use, so ``import realitycheck``
and the command line's ``--help`` stay fast; the registries (``datasets``,
``labelers``, ``detectors``, ``backends``, ``retrievers``, ``studies``) import their built-in
components when first asked for a name.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

# The registries are bound here, before anything can import their packages and
# bind the package under the same name; their modules are light.
from realitycheck.backends import backend as backend
from realitycheck.backends import backends as backends
from realitycheck.datasets import dataset as dataset
from realitycheck.datasets import datasets as datasets
from realitycheck.detectors import detector as detector
from realitycheck.detectors import detectors as detectors
from realitycheck.labelers import labeler as labeler
from realitycheck.labelers import labelers as labelers
from realitycheck.retrievers import retriever as retriever
from realitycheck.retrievers import retrievers as retrievers
from realitycheck.studies import studies as studies
from realitycheck.studies import study as study

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers and IDEs
    from realitycheck.analysis import Bootstrap as Bootstrap
    from realitycheck.backends import Backend as Backend
    from realitycheck.backends import Generation as Generation
    from realitycheck.backends import GenerationRequest as GenerationRequest
    from realitycheck.datasets import Bundle as Bundle
    from realitycheck.datasets import Dataset as Dataset
    from realitycheck.detectors import Detector as Detector
    from realitycheck.detectors import RunContext as RunContext
    from realitycheck.errors import BackendError as BackendError
    from realitycheck.errors import DataNotFoundError as DataNotFoundError
    from realitycheck.errors import FatalBackendError as FatalBackendError
    from realitycheck.errors import InvalidInputError as InvalidInputError
    from realitycheck.errors import MissingDependencyError as MissingDependencyError
    from realitycheck.errors import MissingFeatureError as MissingFeatureError
    from realitycheck.errors import RealityCheckError as RealityCheckError
    from realitycheck.errors import RetryableBackendError as RetryableBackendError
    from realitycheck.errors import RunFolderError as RunFolderError
    from realitycheck.errors import UnknownComponentError as UnknownComponentError
    from realitycheck.generation import SamplingPlan as SamplingPlan
    from realitycheck.generation import make_plan as make_plan
    from realitycheck.labelers import Labeler as Labeler
    from realitycheck.pipeline import Evaluation as Evaluation
    from realitycheck.pipeline import EvaluationConfig as EvaluationConfig
    from realitycheck.pipeline import detect as detect
    from realitycheck.pipeline import evaluate as evaluate
    from realitycheck.pipeline import generate as generate
    from realitycheck.pipeline import ingest as ingest
    from realitycheck.pipeline import label as label
    from realitycheck.records import AgreementResult as AgreementResult
    from realitycheck.records import Example as Example
    from realitycheck.records import Label as Label
    from realitycheck.records import MetricResult as MetricResult
    from realitycheck.records import Response as Response
    from realitycheck.records import Score as Score
    from realitycheck.registry import Component as Component
    from realitycheck.registry import Registry as Registry
    from realitycheck.report import ReportFiles as ReportFiles
    from realitycheck.report import write_report as write_report
    from realitycheck.runner import load_run_config as load_run_config
    from realitycheck.runner import run_config as run_config
    from realitycheck.runner import run_demo as run_demo
    from realitycheck.runner import run_studies as run_studies
    from realitycheck.store import RunData as RunData
    from realitycheck.store import RunStore as RunStore
    from realitycheck.store import StudyResult as StudyResult
    from realitycheck.studies import Study as Study

__version__ = "0.1.0"

# The public surface, listed once: each name under the package that defines it.
# ``__all__``, the lazy loading below and ``dir(realitycheck)`` are derived from
# it. The imports above mirror it for type checkers, which cannot read a computed
# ``__all__`` (``X as X`` marks an explicit re-export); tests/test_public_api.py
# checks that they name exactly this table's names.
_PUBLIC: dict[str, tuple[str, ...]] = {
    "analysis": ("Bootstrap",),
    "backends": ("Backend", "Generation", "GenerationRequest", "backend", "backends"),
    "datasets": ("Bundle", "Dataset", "dataset", "datasets"),
    "detectors": ("Detector", "RunContext", "detector", "detectors"),
    "errors": (
        "BackendError",
        "DataNotFoundError",
        "FatalBackendError",
        "InvalidInputError",
        "MissingDependencyError",
        "MissingFeatureError",
        "RealityCheckError",
        "RetryableBackendError",
        "RunFolderError",
        "UnknownComponentError",
    ),
    "generation": ("SamplingPlan", "make_plan"),
    "labelers": ("Labeler", "labeler", "labelers"),
    "pipeline": (
        "Evaluation",
        "EvaluationConfig",
        "detect",
        "evaluate",
        "generate",
        "ingest",
        "label",
    ),
    "records": ("AgreementResult", "Example", "Label", "MetricResult", "Response", "Score"),
    "registry": ("Component", "Registry"),
    "report": ("ReportFiles", "write_report"),
    "retrievers": ("retriever", "retrievers"),
    "runner": ("load_run_config", "run_config", "run_demo", "run_studies"),
    "store": ("RunData", "RunStore", "StudyResult"),
    "studies": ("Study", "studies", "study"),
}

_WHERE: dict[str, str] = {name: home for home, names in _PUBLIC.items() for name in names}

__all__ = sorted([*_WHERE, "__version__"])

# Names renamed in this release, still importable for one more with a warning.
_RENAMED: dict[str, str] = {"Needs": "RunContext"}


def __getattr__(name: str) -> Any:
    """Load a public attribute from the module that defines it, on first use."""
    if name in _RENAMED:
        new = _RENAMED[name]
        warnings.warn(
            f"realitycheck.{name} is renamed realitycheck.{new}; the old name will be removed "
            "in the next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        return __getattr__(new)
    home = _WHERE.get(name)
    if home is None:
        raise AttributeError(f"module 'realitycheck' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"realitycheck.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names and every public name, loaded or not."""
    return sorted({*globals(), *_WHERE})
