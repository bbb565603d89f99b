"""realitycheck: trustworthy evaluation of LLM hallucination detection.

Measure hallucination detectors, correctness labelers and LLM judges against
human labels with honest statistics, and write a report.

Positive class everywhere is *hallucinated*; every detector score is oriented so
that higher means more likely hallucinated.
"""

from realitycheck.backends import Backend, Generation, GenerationRequest, backend, backends
from realitycheck.datasets import Bundle, Dataset, dataset, datasets
from realitycheck.detectors import Detector, Needs, detector, detectors
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
from realitycheck.generation import SamplingPlan, generate, load_run_config, make_plan
from realitycheck.labelers import Labeler, labeler, labelers
from realitycheck.pipeline import (
    Evaluation,
    EvaluationConfig,
    detect,
    evaluate,
    ingest,
    label,
    run_demo,
)
from realitycheck.records import Example, Label, MetricResult, Response, Score
from realitycheck.registry import Component, Registry
from realitycheck.report import ReportFiles, write_report
from realitycheck.store import RunStore
from realitycheck.studies import RunData, Study, StudyResult, studies, study

__version__ = "0.1.0"

__all__ = [
    "Backend",
    "BackendError",
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
    "run_demo",
    "studies",
    "study",
    "write_report",
]
