"""The repetition stress test: repeat a response's sentences, facts unchanged, and re-measure.

Parts: ``_report`` (metrics per k, flags, figure, finding).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap
from realitycheck.detectors import Detector, RunContext, detectors
from realitycheck.errors import InvalidInputError, UnknownComponentError
from realitycheck.labelers import Labeler, labelers
from realitycheck.params import InstanceOf, Interval, SequenceOf, as_tuple, param
from realitycheck.records import Example, Response, records_from_rows
from realitycheck.records.keys import LabelKey, is_human
from realitycheck.registry import Registry
from realitycheck.store import RunData, StudyResult, StudyTable
from realitycheck.studies import Study, base_name, study
from realitycheck.studies.repetition._report import (
    COLUMNS,
    detector_metrics,
    flag_rows,
    labeler_metrics,
    plot_repetition,
    repetition_finding,
)
from realitycheck.text import split_sentences

__all__ = ["Repetition", "repeat_sentences"]

_Rows = list[dict[str, Any]]

SLOW_COMPONENTS: frozenset[str] = frozenset({"embedding_similarity", "embedding_grounding"})
"""Components that load a model; recomputed only with ``include_slow=True``."""

_RECOMPUTABLE_NEEDS = frozenset({"context", "references"})
"""What a component may read and still be recomputed on a repeated text."""
_STORED = "stored with the dataset"

_K = Interval(int, 0)
_TOLERANCE = Interval(float, 0, 1)


def _ks(value: Any) -> Any:
    """The extra-copy counts sorted, without repeats, with 0 first (anything else unchanged)."""
    items = as_tuple(value)
    if not isinstance(items, tuple) or not items or not all(_K.accepts(k) for k in items):
        return items
    ks = tuple(sorted({int(k) for k in items}))
    return ks if 0 in ks else (0, *ks)


def repeat_sentences(text: str, k: int) -> str:
    """Return ``text`` followed by ``k`` extra copies of its sentences.

    The sentences are those of :func:`realitycheck.text.split_sentences`; each
    copy is them joined by single spaces and is appended after one space to
    the response with trailing whitespace removed. ``k = 0`` returns ``text``
    unchanged, and so does a text without any sentence. Every word of the
    response thus appears ``k + 1`` times, in the same order: what it claims
    is unchanged.
    """
    return _repeats(text, (k,))[0]


def _repeats(text: str, ks: tuple[int, ...]) -> list[str]:
    """Return :func:`repeat_sentences` of ``text`` at each k, splitting its sentences once."""
    sentences = split_sentences(text)
    if not sentences:
        return [text] * len(ks)
    head, copy = text.rstrip(), " " + " ".join(sentences)
    return [text if k == 0 else head + copy * k for k in ks]


@study("repetition")
@dataclass(frozen=True, kw_only=True)
class Repetition(Study):
    """Repeat each response's sentences k more times and see which verdicts and metrics move.

    Follows the repetition experiment of Janiak et al. (*The Illusion of
    Progress*, Section 6.4, Table 7): the response's sentences are appended
    ``k`` more times (:func:`repeat_sentences`), so its length grows
    ``k + 1``-fold while its content, and therefore the reference label, stays
    the same. Every automatic labeler and every computable detector present in
    the run is rebuilt from the spec stored with its labels or scores and run
    again on each repeated text. Reported per k: for labelers the share of
    responses labelled hallucinated (of those it labelled), accuracy against
    the reference and Cohen's kappa; for detectors AUROC and PR-AUC against the
    reference and the mean value (higher = more likely hallucinated). ``delta``
    is the change from k = 0. A labeler is flagged when its hallucinated share
    moves by more than ``share_tolerance`` (a fraction: 0.02 = 2 points) at
    some k, a detector when its AUROC moves by more than ``auroc_tolerance``:
    they react to repetition although the facts did not change. Stored
    components (human labels, ``recorded:*``) and those needing more than the
    text, the context and the references (samples, log-probabilities, hidden
    states of the original generation) are not recomputed; embedding-based
    ones only with ``include_slow``. Each dataset
    contributes at most ``max_responses`` responses with a reference label
    (a random subsample drawn with the run's seed).

    Args:
        reference: The labeler taken as ground truth.
        ks: The numbers of extra copies; 0 (the response as it is) is always included.
        max_responses: At most this many responses per dataset.
        auroc_tolerance: Largest tolerated change of a detector's AUROC.
        share_tolerance: Largest tolerated change of a labeler's hallucinated share.
        include_slow: Also recompute embedding-based labelers and detectors.
    """

    ks: tuple[int, ...] = param((0, 1, 2, 4), SequenceOf(_K, min_length=1), convert=_ks)
    max_responses: int = param(2000, Interval(int, 1))
    auroc_tolerance: float = param(0.02, _TOLERANCE)
    share_tolerance: float = param(0.02, _TOLERANCE)
    include_slow: bool = param(False, InstanceOf(bool))
    title: ClassVar[str] = "Repetition stress test"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Repeat, recompute and re-measure on every dataset with reference labels."""
        frames, used, skipped = [], [], []
        for dataset in data.datasets:
            if self.reference not in data.labelers_of(dataset):
                skipped.append(f"{dataset}: no {self.reference!r} labels")
                continue
            chosen_labelers, why_l = self._components(data, dataset, "labeler")
            chosen_detectors, why_d = self._components(data, dataset, "detector")
            reasons: dict[str, list[str]] = {}
            for key, why in why_l + why_d:
                reasons.setdefault(why, []).append(key)
            skipped += [
                f"{dataset}: not recomputed ({why}): {', '.join(keys)}"
                for why, keys in reasons.items()
            ]
            if not chosen_labelers and not chosen_detectors:
                skipped.append(f"{dataset}: no labeler or detector that can be recomputed")
                continue
            frame = self._subsample(data, dataset, bootstrap.seed)
            used.append(
                {
                    "dataset": dataset,
                    "n_with_reference": int(data.verdicts(dataset)[self.reference].notna().sum()),
                    "n_used": len(frame),
                    "seed": bootstrap.seed,
                }
            )
            frames.append(self._measure(data, frame, chosen_labelers, chosen_detectors))
        long = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
        flags = flag_rows(long, self.auroc_tolerance, self.share_tolerance)
        tables = [
            StudyTable(
                "repetition",
                long,
                f"Each metric at k = {', '.join(map(str, self.ks))} extra copies of the "
                f"response's sentences; delta = value - value at k = 0. Reference: "
                f"{self.reference}.",
            ),
            StudyTable(
                "flags",
                flags,
                "Largest change from k = 0 of each labeler's hallucinated share and each "
                f"detector's AUROC; flagged beyond {self.share_tolerance:g} (share) or "
                f"{self.auroc_tolerance:g} (AUROC).",
            ),
            StudyTable(
                "responses",
                pd.DataFrame(used, columns=["dataset", "n_with_reference", "n_used", "seed"]),
                f"Responses used per dataset: all with a {self.reference} label, or a seeded "
                f"random subsample of {self.max_responses:,}.",
            ),
        ]
        figures = [plot_repetition(long)] if not long.empty else []
        return self._result(
            repetition_finding(long, flags, self.ks, self.max_responses),
            tables=tables,
            figures=figures,
            skipped=skipped,
        )

    def _components(
        self, data: RunData, dataset: str, kind: str
    ) -> tuple[list[Any], list[tuple[str, str]]]:
        """Rebuild the dataset's automatic labelers or detectors; say why others are left out."""
        registry: Registry[Any]
        if kind == "labeler":
            keys = [k for k in data.labelers_of(dataset) if not is_human(k)]
            table, column, registry = data.labels, "labeler", labelers
        else:
            keys = data.detectors_of(dataset)
            table, column, registry = data.scores, "detector", detectors
        specs = table.drop_duplicates(column).set_index(column)["spec"]
        chosen, why = [], []
        for key in keys:
            component, reason = _rebuild(registry, key, str(specs.get(key, "")))
            if component is None:
                why.append((key, reason))
            elif base_name(key) in SLOW_COMPONENTS and not self.include_slow:
                why.append((key, "loads a model; set include_slow=True"))
            else:
                chosen.append((key, component))
        return chosen, why

    def _subsample(self, data: RunData, dataset: str, seed: int) -> pd.DataFrame:
        frame = data.frame(dataset)
        frame = frame[data.verdicts(dataset)[self.reference].notna()]
        if len(frame) <= self.max_responses:
            return frame
        rng = np.random.default_rng(seed)
        keep = np.sort(rng.choice(len(frame), size=self.max_responses, replace=False))
        return frame.iloc[keep]

    def _measure(
        self,
        data: RunData,
        frame: pd.DataFrame,
        chosen_labelers: list[tuple[str, Labeler]],
        chosen_detectors: list[tuple[str, Detector]],
    ) -> pd.DataFrame:
        dataset = str(frame["dataset"].iloc[0])
        rows = data.examples[data.examples["example_id"].isin(set(frame["example_id"]))]
        examples = {
            e.example_id: e
            for e in records_from_rows(Example, cast(_Rows, rows.to_dict("records")))
        }
        run = RunContext(examples=examples)
        y = data.verdicts(dataset)[self.reference].reindex(frame.index).to_numpy()
        # Every k in one call per component, so per-source caches are built once; results
        # are split back by position.
        originals = list(frame.itertuples())
        texts = [_repeats(str(row.text), self.ks) for row in originals]
        responses = [
            Response(
                response_id=f"{row.Index}#repeat={k}",
                example_id=str(row.example_id),
                model=str(row.model),
                text=repeated[j],
            )
            for j, k in enumerate(self.ks)
            for row, repeated in zip(originals, texts, strict=True)
        ]
        n = len(frame)
        out = []
        for key, labeler in chosen_labelers:
            found = labeler.label(responses, examples)
            verdict = np.array(
                [np.nan if x.hallucinated is None else x.hallucinated for x in found]
            )
            for j, k in enumerate(self.ks):
                part = verdict[j * n : (j + 1) * n].astype(float)
                out.append(labeler_metrics(y, part).assign(component=key, k=k))
        for key, detector in chosen_detectors:
            scores = detector.score(responses, run)
            value = np.array([np.nan if x.value is None else x.value for x in scores], dtype=float)
            for j, k in enumerate(self.ks):
                part = value[j * n : (j + 1) * n]
                out.append(detector_metrics(y, part).assign(component=key, k=k))
        long = pd.concat(out, ignore_index=True).assign(dataset=dataset)
        start = long[long["k"] == 0].set_index(["component", "metric"])["value"]
        long["delta"] = (
            long["value"].to_numpy()
            - start.reindex(pd.MultiIndex.from_frame(long[["component", "metric"]])).to_numpy()
        )
        return long[COLUMNS]


def _rebuild(registry: Registry[Any], key: str, spec_text: str) -> tuple[Any | None, str]:
    """Build a component from its stored spec (or its key); None and why when it cannot be."""
    try:
        spec = json.loads(spec_text) if spec_text else {}
    except json.JSONDecodeError:
        spec = {}
    try:
        if (
            isinstance(spec, dict)
            and isinstance(spec.get("name"), str)
            and spec["name"] in registry
        ):
            component = registry.create(spec["name"], **dict(spec.get("params") or {}))
        else:
            component = registry.create_from_key(key)
    except (InvalidInputError, UnknownComponentError) as exc:
        if LabelKey.parse(key).is_recorded:
            return None, _STORED
        return None, f"cannot be rebuilt: {exc}"
    blocked = sorted(set(component.needs) - _RECOMPUTABLE_NEEDS)
    if {"stored", "recorded"} & set(blocked):
        return None, _STORED
    if blocked:
        return None, f"needs {', '.join(blocked)} of the original generation"
    return component, ""
