"""A run's tables loaded once, as frames shared by evaluation and studies."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from realitycheck.records.keys import LabelKey
from realitycheck.records.model_info import ModelInfo, models_from_manifest
from realitycheck.store._store import RunStore

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RunData"]


class RunData:
    """A run's tables, loaded once and shared by every study.

    Attributes:
        store: The run.
        examples: ``example_id, dataset, task, question, context, references, …``
            plus ``context_chars``.
        responses: Every response column plus its example's ``dataset`` and
            ``task`` and ``length_chars`` / ``length_words`` of its text.
        labels: The labels table (``response_id, labeler, hallucinated, score, …``).
        scores: The scores table (``response_id, detector, value, error, …``).
    """

    def __init__(self, store: RunStore) -> None:
        self.store = store
        examples = store.frame("examples")
        examples["context_chars"] = examples["context"].str.len()
        self.examples = examples
        responses = store.frame("responses").merge(
            examples[["example_id", "dataset", "task"]], on="example_id", how="left"
        )
        responses["length_chars"] = responses["text"].str.len()
        responses["length_words"] = responses["text"].map(lambda t: len(t.split()))
        self.responses = responses
        self.labels = store.frame("labels")
        self.scores = store.frame("scores")

    @functools.cached_property
    def models(self) -> dict[str, ModelInfo]:
        """The run's per-model metadata (family, size, tuning, decoding), by model name.

        Written to the manifest (``config.models``) from a models file
        (``--models``) or a run config's ``[models]`` table; ``{}`` when none.
        """
        return models_from_manifest(self.store.read_manifest().get("config", {}).get("models"))

    @property
    def datasets(self) -> list[str]:
        """Datasets with at least one response, sorted."""
        return sorted(self.responses["dataset"].dropna().unique())

    @functools.cached_property
    def wide_verdicts(self) -> pd.DataFrame:
        """Every labeler's verdict (1.0 / 0.0 / NaN), one row per labelled response id."""
        hall = self.labels["hallucinated"].map({True: 1.0, False: 0.0}).astype(float)
        return self.labels.assign(h=hall).pivot(index="response_id", columns="labeler", values="h")

    @functools.cached_property
    def wide_label_scores(self) -> pd.DataFrame:
        """Every labeler's continuous score, one row per labelled response id."""
        return self.labels.pivot(index="response_id", columns="labeler", values="score")

    @functools.cached_property
    def wide_scores(self) -> pd.DataFrame:
        """Every detector's value, one row per scored response id."""
        return self.scores.pivot(index="response_id", columns="detector", values="value")

    def frame(self, dataset: str | None = None) -> pd.DataFrame:
        """Return responses (of one dataset, or all) with their metadata, indexed by id."""
        df = self.responses if dataset is None else self.responses.query("dataset == @dataset")
        return df.set_index("response_id")

    def verdicts(self, dataset: str | None = None) -> pd.DataFrame:
        """Labelers' verdicts as 1.0 / 0.0 / NaN, one column per labeler key."""
        return self.wide_verdicts.reindex(self.frame(dataset).index).astype(float)

    def label_scores(self, dataset: str | None = None) -> pd.DataFrame:
        """Labelers' continuous scores (higher = more likely hallucinated), NaN if none."""
        return self.wide_label_scores.reindex(self.frame(dataset).index).astype(float)

    def detector_scores(self, dataset: str | None = None) -> pd.DataFrame:
        """Detector values (higher = more likely hallucinated), NaN when missing."""
        return self.wide_scores.reindex(self.frame(dataset).index).astype(float)

    def labelers_of(self, dataset: str) -> list[str]:
        """Labeler keys with at least one verdict on ``dataset``."""
        v = self.verdicts(dataset)
        return sorted(c for c in v.columns if v[c].notna().any())

    def detectors_of(self, dataset: str) -> list[str]:
        """Detector keys with at least one value on ``dataset``."""
        s = self.detector_scores(dataset)
        return sorted(c for c in s.columns if s[c].notna().any())

    def human_reference(self, dataset: str, preferred: str = "human") -> str | None:
        """Return ``preferred`` if the dataset has it, else None."""
        return preferred if preferred in self.labelers_of(dataset) else None

    def annotators_of(self, dataset: str) -> list[str]:
        """The single-annotator label keys (``human:<name>``) of a dataset."""
        return [k for k in self.labelers_of(dataset) if LabelKey.parse(k).is_annotator]

    def example_ids(self, dataset: str | None = None) -> np.ndarray:
        """The example id of each response of :meth:`frame`, in the same order."""
        return self.frame(dataset)["example_id"].to_numpy()
