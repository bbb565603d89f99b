"""Prompt multiplicity: how much of a benchmark's accuracy is randomness across prompts?

Ganesh et al. (*Rethinking Hallucinations: Correctness, Consistency, and
Prompt Multiplicity*, seed paper 004) answer each question under several
equivalent prompts and find that a large share of the "correct" answers under
the default prompt change with the prompt. For every model (and retrieval
setting) on every dataset this study reports accuracy mean ± std across
variants, ambiguity, self-consistency, the prompt-agnostic factuality /
prompt-agnostic error / randomness taxonomy at ``tau`` (section 3), whether
each detector's score tracks correctness or consistency (section 5.1,
Figure 4), and how the categories move when retrieval is added (section 5.2).

Models are counted by name; the retrieval setting (the retriever's key in a
response's meta, none without) is a factor of its own, a column of every
table, never another model: the Wilcoxon test of section 5.1 runs across the
models within each retrieval setting. The choose stage's answers carry their
chosen option's token log-probs (and, on ``hf``, entropies) as features, so
``perplexity`` and ``mean_token_entropy`` take part in that test.

It works on the choose stage's multiple-choice answers and on free-form
answers from ``generate`` with several ``variants``; see
:mod:`realitycheck.studies.prompt_multiplicity._answers` for when two answers
agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from realitycheck.analysis import Bootstrap
from realitycheck.params import Interval, NonEmptyStr, OneOf, param
from realitycheck.store import RunData, StudyFigure, StudyResult, StudyTable
from realitycheck.studies import Study, retrieval_ambiguity, study
from realitycheck.studies.prompt_multiplicity._answers import (
    AGREEMENTS,
    answer_table,
    correctness_labeler,
    retriever_of,
)
from realitycheck.studies.prompt_multiplicity._detection import (
    MEAN_COLUMNS,
    TEST_COLUMNS,
    default_answers,
    detector_means,
    detector_tests,
)
from realitycheck.studies.prompt_multiplicity._figures import accuracy_figure, taxonomy_figure
from realitycheck.studies.prompt_multiplicity._flow import (
    TRANSITION_COLUMNS,
    flow_figure,
    transitions,
)
from realitycheck.studies.prompt_multiplicity._measures import (
    QUESTION_COLUMNS,
    SUMMARY_COLUMNS,
    default_variant,
    measure,
)
from realitycheck.studies.prompt_multiplicity._report import CAPTIONS, finding

__all__ = ["PromptMultiplicity"]

TABLE_COLUMNS = {
    "multiplicity": SUMMARY_COLUMNS,
    "questions": QUESTION_COLUMNS,
    "detector_means": MEAN_COLUMNS,
    "detector_tests": TEST_COLUMNS,
    "transitions": TRANSITION_COLUMNS,
    "retrieval_ambiguity": ["model", "retriever", "n_questions", "n_changed", "ambiguity"],
}


@study("prompt_multiplicity")
@dataclass(frozen=True, kw_only=True)
class PromptMultiplicity(Study):
    """Accuracy, ambiguity, self-consistency and the PAF / PAE / randomness taxonomy across prompts.

    Args:
        reference: The labels saying whether an answer is correct (a labeler
            or judge key); where a dataset has none, the choose stage's
            ``gold`` labels.
        tau: Self-consistency at or above which a question is prompt-agnostic.
        agreement: ``answer`` (same chosen option, or same normalised text)
            or ``label`` (same correctness label).
        default_variant: The variant key of the default prompt; ``auto``
            takes ``default`` (choose) and else ``zero_shot`` (generate).
        min_models: Fewest models (by name, within one retrieval setting)
            for a Wilcoxon p-value (6 is the fewest for which the exact
            two-sided p can fall below 0.05).
    """

    tau: float = param(0.8, Interval(float, 0, 1))
    agreement: str = param("answer", OneOf(AGREEMENTS))
    default_variant: str = param("auto", NonEmptyStr())
    min_models: int = param(6, Interval(int, 2))

    title: ClassVar[str] = "Prompt multiplicity: correctness, consistency and randomness"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Measure every dataset's models under their prompt variants."""
        parts: dict[str, list[pd.DataFrame]] = {k: [] for k in TABLE_COLUMNS}
        figures: list[StudyFigure] = []
        skipped: list[str] = []
        for ds in data.datasets:
            tables, reasons = self._dataset(data, ds)
            skipped += reasons
            for name, frame in tables.items():
                parts[name].append(frame.assign(dataset=ds)[["dataset", *frame.columns]])
            figures += _figures(ds, tables)
        frames = {
            name: pd.concat(v, ignore_index=True) if v else pd.DataFrame(columns=["dataset", *c])
            for (name, v), c in zip(parts.items(), TABLE_COLUMNS.values(), strict=True)
        }
        return self._result(
            finding(frames, skipped, tau=self.tau, min_models=self.min_models),
            tables=[StudyTable(k, f, CAPTIONS[k].format(s=self)) for k, f in frames.items()],
            figures=figures,
            skipped=skipped,
        )

    def _dataset(self, data: RunData, ds: str) -> tuple[dict[str, pd.DataFrame], list[str]]:
        labeler = correctness_labeler(data, ds, self.reference)
        if labeler is None:
            return {}, [f"{ds}: skipped: no {self.reference!r} or 'gold' correctness labels"]
        answers, repeats = answer_table(data, ds, labeler, self.agreement)
        summaries, questions, reasons = [], [], []
        if repeats:
            reasons.append(
                f"{ds}: {repeats} response(s) repeat a model, retrieval setting, question and "
                "variant already answered (another plan); the first by response id was kept"
            )
        defaults: dict[tuple[str, str], str] = {}
        for key, group in answers.groupby(["model", "retriever"], sort=True):
            model, retriever = str(key[0]), str(key[1])
            who = f"{ds}: {model}" + (f" with {retriever}" if retriever else "")
            default = default_variant(set(group["variant"]), self.default_variant)
            if group["variant"].nunique() < 2:
                reasons.append(f"{who}: skipped: answered under one prompt variant only")
            elif default is None:
                reasons.append(f"{who}: skipped: no answers under the default prompt variant")
            else:
                defaults[model, retriever] = default
                summary, per_question = measure(group, default, self.tau)
                summaries.append(summary)
                questions.append(per_question)
        if not summaries:
            return {}, reasons or [f"{ds}: skipped: no answers with correctness labels"]
        tables = {
            "multiplicity": pd.DataFrame(summaries, columns=SUMMARY_COLUMNS),
            "questions": pd.concat(questions, ignore_index=True),
        }
        rows = default_answers(answers, tables["questions"], defaults)
        scores = data.detector_scores(ds)[data.detectors_of(ds)]
        tables["detector_means"] = detector_means(rows, scores)
        tables["detector_tests"] = detector_tests(rows, scores, self.min_models)
        tables["transitions"] = transitions(answers, defaults, self.tau)
        tables["retrieval_ambiguity"] = _retrieval_ambiguity(data, ds)
        return tables, reasons


def _retrieval_ambiguity(data: RunData, ds: str) -> pd.DataFrame:
    frame = data.frame(ds)
    frame = frame.assign(retriever=frame["meta"].map(retriever_of))
    frame = frame[frame["retriever"] != ""]
    columns = TABLE_COLUMNS["retrieval_ambiguity"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    return retrieval_ambiguity(frame, by=("model", "retriever"))[columns]


def _figures(ds: str, tables: dict[str, pd.DataFrame]) -> list[StudyFigure]:
    if "multiplicity" not in tables:
        return []
    summary = tables["multiplicity"]
    out = [taxonomy_figure(ds, summary), accuracy_figure(ds, summary)]
    flows = tables["transitions"]
    for retriever, part in flows.groupby("retriever", sort=True):
        if part["n"].sum():
            out.append(flow_figure(ds, str(retriever), part))
    return out
