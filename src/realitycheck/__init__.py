"""realitycheck: trustworthy evaluation of LLM hallucination detection.

Measure hallucination detectors, correctness labelers and LLM judges against
human labels with honest statistics, and write a report.

Positive class everywhere is *hallucinated*; every detector score is oriented so
that higher means more likely hallucinated.
"""

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

__version__ = "0.1.0"

__all__ = [
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
    "RunStore",
    "Score",
    "UnknownComponentError",
    "__version__",
    "dataset",
    "datasets",
    "detect",
    "detector",
    "detectors",
    "evaluate",
    "ingest",
    "label",
    "labeler",
    "labelers",
    "run_demo",
    "write_report",
]
