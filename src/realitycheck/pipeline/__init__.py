"""The stages of a run, from loading data to the evaluation tables."""

from realitycheck.pipeline._demo import DEMO_DATASETS, DEMO_DETECTORS, DEMO_LABELERS, run_demo
from realitycheck.pipeline._evaluate import (
    Evaluation,
    EvaluationConfig,
    evaluate,
    is_human_key,
    split_of,
)
from realitycheck.pipeline._stages import StageReport, detect, ingest, label

__all__ = [
    "DEMO_DATASETS",
    "DEMO_DETECTORS",
    "DEMO_LABELERS",
    "Evaluation",
    "EvaluationConfig",
    "StageReport",
    "detect",
    "evaluate",
    "ingest",
    "is_human_key",
    "label",
    "run_demo",
    "split_of",
]
