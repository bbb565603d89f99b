"""The study protocol: a diagnostic over a whole run, returning tables, figures and a finding.

A study reads a run through :class:`RunData` (the run's tables loaded once),
and returns a :class:`StudyResult`: named tables (DataFrames, also written as
CSV), PNG figures, a short plain-language finding, and one line per dataset it
could not run on and why (no annotators, no context…). A study never prints
and never fails a run because a dataset lacks what it needs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from realitycheck.registry import Component, Registry
from realitycheck.store import RunStore

__all__ = [
    "RunData",
    "Study",
    "StudyFigure",
    "StudyResult",
    "StudyTable",
    "study",
    "studies",
]


@dataclass(frozen=True)
class StudyTable:
    """One table of a study: a stable file-safe ``name``, the frame and a caption."""

    name: str
    frame: pd.DataFrame
    caption: str = ""


@dataclass(frozen=True)
class StudyFigure:
    """One figure of a study: a stable file-safe ``stem``, PNG bytes and a caption."""

    stem: str
    png: bytes
    caption: str = ""


@dataclass(frozen=True, kw_only=True)
class StudyResult:
    """What a study found.

    Attributes:
        study: Key of the study that produced it.
        spec: The study's spec (name, params, version).
        finding: A few plain-language sentences stating what the numbers show.
        tables: The tables, in reading order.
        figures: The figures, in reading order.
        skipped: One line per dataset (or part) the study could not run on, and why.
    """

    study: str
    spec: dict[str, object]
    finding: str
    tables: tuple[StudyTable, ...] = ()
    figures: tuple[StudyFigure, ...] = ()
    skipped: tuple[str, ...] = ()

    def table(self, name: str) -> pd.DataFrame:
        """Return the table called ``name``."""
        for t in self.tables:
            if t.name == name:
                return t.frame
        raise KeyError(
            f"{self.study} has no table {name!r}; it has {[t.name for t in self.tables]}"
        )


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

    @property
    def datasets(self) -> list[str]:
        """Datasets with at least one response, sorted."""
        return sorted(self.responses["dataset"].dropna().unique())

    @functools.cached_property
    def _wide_labels(self) -> pd.DataFrame:
        hall = self.labels["hallucinated"].map({True: 1.0, False: 0.0}).astype(float)
        return self.labels.assign(h=hall).pivot(index="response_id", columns="labeler", values="h")

    @functools.cached_property
    def _wide_label_scores(self) -> pd.DataFrame:
        return self.labels.pivot(index="response_id", columns="labeler", values="score")

    @functools.cached_property
    def _wide_scores(self) -> pd.DataFrame:
        return self.scores.pivot(index="response_id", columns="detector", values="value")

    def frame(self, dataset: str | None = None) -> pd.DataFrame:
        """Return responses (of one dataset, or all) with their metadata, indexed by id."""
        df = self.responses if dataset is None else self.responses.query("dataset == @dataset")
        return df.set_index("response_id")

    def verdicts(self, dataset: str | None = None) -> pd.DataFrame:
        """Labelers' verdicts as 1.0 / 0.0 / NaN, one column per labeler key."""
        return self._wide_labels.reindex(self.frame(dataset).index).astype(float)

    def label_scores(self, dataset: str | None = None) -> pd.DataFrame:
        """Labelers' continuous scores (higher = more likely hallucinated), NaN if none."""
        return self._wide_label_scores.reindex(self.frame(dataset).index).astype(float)

    def detector_scores(self, dataset: str | None = None) -> pd.DataFrame:
        """Detector values (higher = more likely hallucinated), NaN when missing."""
        return self._wide_scores.reindex(self.frame(dataset).index).astype(float)

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
        return [k for k in self.labelers_of(dataset) if k.startswith("human:")]

    def example_ids(self, dataset: str | None = None) -> np.ndarray:
        """The example id of each response of :meth:`frame`, in the same order."""
        return self.frame(dataset)["example_id"].to_numpy()


@dataclass(frozen=True, kw_only=True)
class Study(Component):
    """A diagnostic over a run. Subclasses implement :meth:`run`.

    Args:
        reference: The labeler taken as ground truth (default: human labels).
    """

    reference: str = "human"
    needs: ClassVar[frozenset[str]] = frozenset()
    title: ClassVar[str] = ""

    def run(self, data: RunData) -> StudyResult:
        """Run the study over the whole run."""
        raise NotImplementedError

    def _result(
        self,
        finding: str,
        *,
        tables: list[StudyTable] | tuple[StudyTable, ...] = (),
        figures: list[StudyFigure] | tuple[StudyFigure, ...] = (),
        skipped: list[str] | tuple[str, ...] = (),
    ) -> StudyResult:
        return StudyResult(
            study=self.key,
            spec=self.spec,
            finding=finding,
            tables=tuple(tables),
            figures=tuple(figures),
            skipped=tuple(skipped),
        )


studies: Registry[Study] = Registry("studies", "realitycheck.studies")
study = studies.register
