"""The stages that fill and measure a run: ingest, label, detect, evaluate."""

from realitycheck.pipeline._evaluate import Evaluation, EvaluationConfig, check_slice_by, evaluate
from realitycheck.pipeline._stages import StageReport, detect, ingest, label

__all__ = [
    "Evaluation",
    "EvaluationConfig",
    "StageReport",
    "check_slice_by",
    "detect",
    "evaluate",
    "ingest",
    "label",
]
