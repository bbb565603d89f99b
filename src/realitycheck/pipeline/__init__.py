"""The stages that fill and measure a run: ingest, label, detect, evaluate."""

from realitycheck.pipeline._evaluate import Evaluation, EvaluationConfig, evaluate
from realitycheck.pipeline._slices import check_slice_by
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
