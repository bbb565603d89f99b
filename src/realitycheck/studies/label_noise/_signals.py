"""What the label-noise study ranks: detectors and labelers, and who is left out.

A detector is ranked by its value. A labeler (an LLM judge, a lexical or
semantic labeler, a panel, a recorded judge) is ranked by its continuous
``score`` where it has one, else by its verdict as a 0/1 score, as paper 002
ranks LLM judges next to detectors. The reference labeler itself and every
labeler derived from it are never ranked against it (:func:`derived_from`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from realitycheck.errors import InvalidInputError
from realitycheck.records.keys import LabelKey
from realitycheck.registry import parse_key
from realitycheck.store import RunData

__all__ = ["DETECTOR", "LABELER", "SCORE", "VALUE", "VERDICT", "Signals", "derived_from"]

DETECTOR = "detector"
LABELER = "labeler"
VALUE = "value"
"""``score_used`` of a detector: its value."""
SCORE = "score"
"""``score_used`` of a labeler with a continuous score."""
VERDICT = "verdict (0/1)"
"""``score_used`` of a labeler without one: its verdict, 1 = hallucinated."""


@dataclass
class Signals:
    """The ranked signals of one dataset, each oriented higher = more likely hallucinated.

    Attributes:
        values: Key -> value per response of the dataset (NaN where missing).
        kind: Key -> ``detector`` or ``labeler``.
        score_used: Key -> :data:`VALUE`, :data:`SCORE` or :data:`VERDICT`.
        excluded: Labeler key -> why it is not ranked.
    """

    values: dict[str, np.ndarray] = field(default_factory=dict)
    kind: dict[str, str] = field(default_factory=dict)
    score_used: dict[str, str] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)

    @property
    def detectors(self) -> dict[str, np.ndarray]:
        """The detectors' values only."""
        return {k: v for k, v in self.values.items() if self.kind[k] == DETECTOR}

    @classmethod
    def of(cls, data: RunData, dataset: str, reference: str) -> Signals:
        """Every detector and every labeler of ``dataset`` not derived from ``reference``."""
        out = cls()
        frame = data.detector_scores(dataset)
        for key in data.detectors_of(dataset):
            out.values[key] = frame[key].to_numpy()
            out.kind[key], out.score_used[key] = DETECTOR, VALUE
        scores, verdicts = data.label_scores(dataset), data.verdicts(dataset)
        for key in data.labelers_of(dataset):
            why = derived_from(key, reference, _spec(data, key))
            if not why and key in out.values:
                why = "its key is also a detector's, ranked as the detector"
            if why:
                out.excluded[key] = why
                continue
            has_score = key in scores.columns and bool(scores[key].notna().any())
            out.values[key] = (scores if has_score else verdicts)[key].to_numpy()
            out.kind[key], out.score_used[key] = LABELER, SCORE if has_score else VERDICT
        return out


def _spec(data: RunData, key: str) -> Mapping[str, Any]:
    """The spec recorded with ``key``'s first label, or ``{}``."""
    for text in data.labels.loc[data.labels["labeler"] == key, "spec"].head(1):
        try:
            spec = json.loads(text) if isinstance(text, str) and text else {}
        except ValueError:
            return {}
        return spec if isinstance(spec, dict) else {}
    return {}


def _components(spec: Any) -> Iterator[Mapping[str, Any]]:
    """``spec`` and every component spec nested in its parameters, depth first."""
    if isinstance(spec, Mapping):
        if isinstance(spec.get("name"), str) and isinstance(spec.get("params"), Mapping):
            yield spec
        for value in spec.values():
            yield from _components(value)
    elif isinstance(spec, list | tuple):
        for value in spec:
            yield from _components(value)


def derived_from(key: str, reference: str, spec: Mapping[str, Any]) -> str:
    """Why the labeler ``key`` must not be ranked against ``reference``; ``""`` when it may.

    A labeler is left out when it is the reference; when both are human
    labels and one holds the other's votes (against an aggregate ``human`` or
    ``human[protocol=…]``: every human key, as the annotators are its inputs
    and another protocol aggregates the same ones; against one annotator
    ``human:<name>``: the aggregates, which count that annotator's vote);
    when it was shown the human annotation of the response it judges
    (``include_self`` anywhere in its spec, against a human reference); and,
    against a component reference such as ``rouge_l``, when it is that
    component with other parameters or holds it as a member (a panel).

    Args:
        key: The labeler's key.
        reference: The reference labeler's key.
        spec: The labeler's recorded spec (``{}`` when unknown).
    """
    if key == reference:
        return "the reference"
    ref, this = LabelKey.parse(reference), LabelKey.parse(key)
    if ref.is_human and this.is_human:
        if ref.is_human_aggregate:
            return f"human labels of the annotators behind {reference}"
        if this.is_human_aggregate:
            return f"an aggregate that counts {reference}'s votes"
        return ""
    nested = list(_components(spec))
    if ref.is_human:
        if any(c["params"].get("include_self") is True for c in nested):
            return "shown the human annotation of the response it judges (include_self)"
        return ""
    if ref.kind != "component":
        return ""
    try:
        name = parse_key(reference)[0]
        own = parse_key(key)[0] if this.kind == "component" else ""
    except InvalidInputError:
        return ""
    if own == name:
        return f"{reference} with other parameters"
    if any(c["name"] == name for c in nested[1:]):
        return f"built on {name} (a member of it)"
    return ""
