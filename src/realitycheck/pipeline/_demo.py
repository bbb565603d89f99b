"""The demo: cheap detectors and lexical/embedding labelers on real human-labelled data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from realitycheck._progress import NullProgress, Progress
from realitycheck.datasets import datasets
from realitycheck.detectors import detectors
from realitycheck.labelers import labelers
from realitycheck.pipeline._evaluate import Evaluation, EvaluationConfig, evaluate
from realitycheck.pipeline._stages import detect, ingest, label
from realitycheck.store import RunStore

__all__ = ["DEMO_DATASETS", "DEMO_DETECTORS", "DEMO_LABELERS", "DemoResult", "run_demo"]

DEMO_DATASETS = ("ragtruth", "faithbench", "halueval-general", "truthfulqa")
DEMO_LABELERS = (
    "rouge_l",
    "bleu",
    "token_f1",
    "exact_match",
    "knowledge_f1",
    "embedding_similarity",
)
DEMO_DETECTORS = (
    "length[unit=chars]",
    "length",
    "length[unit=tokens]",
    "source_overlap",
    "novel_numbers",
    "embedding_grounding",
)


@dataclass(frozen=True, kw_only=True)
class DemoResult:
    """Where the demo wrote its run and what the evaluation found."""

    run_dir: Path
    evaluation: Evaluation


def run_demo(
    out: str | Path,
    *,
    data_dir: str | Path | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    progress: Progress | None = None,
) -> DemoResult:
    """Load the demo datasets, label, detect and evaluate into ``out/run``.

    Labelers and detectors run only where a dataset has what they need
    (references, context); the rest is noted in the run's manifest. Re-running
    reuses everything already stored.
    """
    progress = progress or NullProgress()
    store = RunStore(Path(out) / "run")
    store.update_manifest(
        config={
            "demo": {
                "datasets": list(DEMO_DATASETS),
                "labelers": list(DEMO_LABELERS),
                "detectors": list(DEMO_DETECTORS),
            }
        }
    )
    for name in DEMO_DATASETS:
        ds = datasets.create(name, data_dir=data_dir) if data_dir else datasets.create(name)
        ingest(store, ds, progress=progress)
    notes = []
    lab_report = label(
        store, [labelers.create_from_key(k) for k in DEMO_LABELERS], progress=progress
    )
    det_report = detect(
        store, [detectors.create_from_key(k) for k in DEMO_DETECTORS], progress=progress
    )
    for report in (lab_report, det_report):
        notes += [f"{key}: skipped {why}" for key, why in report.skipped.items()]
    store.update_manifest(notes=notes)
    evaluation = evaluate(
        store, EvaluationConfig(n_resamples=n_resamples, seed=seed), progress=progress
    )
    return DemoResult(run_dir=store.path, evaluation=evaluation)
