"""FaithBench: summaries of ten LLMs with per-annotator span labels and recorded detectors.

Severity order of the FaithBench labels: Unwanted > Questionable > Benign >
Consistent. An annotation's severity comes from its top-level tags
(``Unwanted``, ``Questionable``, ``Benign``); a dotted sub-tag such as
``Unwanted.Intrinsic`` counts only when the annotation has no top-level tag.
This reproduces the ``worst-label`` column of ``FaithBench.csv`` on 748 of the
750 released summaries.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from realitycheck.datasets._base import Dataset, dataset
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._io import IdMaker, as_object, field_of, read_json, spec_json
from realitycheck.errors import InvalidInputError
from realitycheck.params import OneOf, param
from realitycheck.records import Example, Label, Response, Score

__all__ = [
    "ANNOTATED",
    "JUDGES",
    "PROTOCOLS",
    "RECORDED",
    "SEVERITY",
    "FaithBench",
    "annotation_severity",
    "majority_severity",
    "worst_severity",
]

SEVERITY: tuple[str, ...] = ("Consistent", "Benign", "Questionable", "Unwanted")
"""FaithBench labels, least to most severe (the index is the severity)."""

RECORDED: tuple[str, ...] = (
    "hhemv1",
    "hhem-2.1",
    "hhem-2.1-english",
    "trueteacher",
    "true_nli",
)
"""Detector outputs in each sample's metadata (all oriented high = consistent)."""

JUDGES: tuple[str, ...] = ("gpt-3.5-turbo", "gpt-4-turbo", "gpt_4o")
"""LLM judges' 1/0 verdicts in each sample's metadata (1 = consistent); stored as
labels ``recorded:<name>``, not as scores, so they are measured as labelers."""

PROTOCOLS: dict[str, dict[int, bool | None]] = {
    # Benign and Questionable majorities are excluded (None), their category kept.
    "majority": {0: False, 1: None, 2: None, 3: True},
    "worst": {0: False, 1: False, 2: True, 3: True},
}
"""How each protocol's aggregated severity maps to ``hallucinated``."""

ANNOTATED = "annotated_responses"
"""Key of ``Example.meta`` that lists the example's summaries with their human annotations:
``response_id``, ``model``, ``text``, ``verdict`` (``consistent``, ``benign`` for Benign or
Questionable, ``unwanted``; ``""`` without annotators), ``human_label`` (the ``human`` label's
category) and ``annotations`` (``span``, ``source_span``, ``label``, ``note``; exact
duplicates across annotators dropped). Few-shot judges (``faithjudge``) read it."""

VERDICTS = {
    "Consistent": "consistent",
    "Benign": "benign",
    "Questionable": "benign",
    "Unwanted": "unwanted",
}
"""Ternary verdict of each FaithBench label (Benign and Questionable share one)."""

BATCHES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16)


def annotation_severity(tags: Sequence[str]) -> int | None:
    """Return the severity index of one annotation's label tags, or None without any.

    Top-level tags decide; dotted sub-tags (``Unwanted.Extrinsic``) count through
    their parent only when no top-level tag is present.
    """
    top = [SEVERITY.index(t) for t in tags if t in SEVERITY]
    if top:
        return max(top)
    parents = [SEVERITY.index(t.split(".")[0]) for t in tags if t.split(".")[0] in SEVERITY]
    return max(parents) if parents else None


def worst_severity(severities: Sequence[int]) -> int:
    """Return the most severe of the annotators' severities (Consistent when empty)."""
    return max(severities, default=0)


def majority_severity(severities: Sequence[int]) -> int:
    """Return the most frequent severity; a tie goes to the more severe label.

    Raises:
        InvalidInputError: When ``severities`` is empty.
    """
    if not severities:
        raise InvalidInputError("A majority needs at least one annotator. Got none instead.")
    counts = Counter(severities)
    return max(counts, key=lambda s: (counts[s], s))


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "anonymous"


@dataset("faithbench")
@dataclass(frozen=True, kw_only=True)
class FaithBench(Dataset):
    """FaithBench: 750 summaries (10 LLMs) with 2-5 annotators per batch of 50.

    Labels: ``human:<annotator>`` (each annotator's most severe label; a summary
    an annotator of the batch did not mark is Consistent), ``human[protocol=majority]``,
    ``human[protocol=worst]`` and ``human`` (= the chosen protocol). Scores:
    ``recorded:<detector>`` for the five detectors FaithBench ships (HHEM x3,
    TrueTeacher, TRUE NLI), flipped to ``1 - value`` so that higher = more likely
    hallucinated. The three GPT judges' verdicts are labels, not scores
    (``recorded:gpt-3.5-turbo``, ``recorded:gpt-4-turbo``, ``recorded:gpt_4o``:
    hallucinated when the judge said inconsistent, category ``consistent`` /
    ``inconsistent``), so they are measured as labelers against the human
    protocols and any of them can be the reference. Each example's
    ``meta["annotated_responses"]`` (:data:`ANNOTATED`) lists its summaries with
    their human annotations, for few-shot judges such as ``faithjudge``.

    Args:
        protocol: Which aggregation is also stored as plain ``human``:
            ``majority`` (most frequent annotator severity, ties to the more severe;
            Unwanted = hallucinated, Consistent = not, Benign/Questionable = None) or
            ``worst`` (most severe over annotators; Questionable/Unwanted = hallucinated).
    """

    protocol: str = param("majority", OneOf(PROTOCOLS))

    files: ClassVar[tuple[str, ...]] = tuple(f"faithbench/release/batch_{b}.json" for b in BATCHES)
    description: ClassVar[str] = (
        "FaithBench: 750 summaries of 10 LLMs with per-annotator labels (Unwanted / "
        "Questionable / Benign), 5 recorded detectors (HHEM, TrueTeacher, TRUE) and 3 recorded "
        "GPT judges (as labels)."
    )

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read every release batch into records."""
        root = self.root()
        out = Bundle(examples=[], notes=[])
        unlabelled = 0
        for rel in self.files:
            path = root / rel
            batch = path.stem.removeprefix("batch_")
            before = len(out.responses)
            unlabelled += self._read_batch(path, batch, out)
            if progress is not None:
                progress(len(out.responses) - before)
        out.notes.extend(self._notes(unlabelled))
        return out

    def _read_batch(self, path: Path, batch: str, out: Bundle) -> int:
        """Append the records of one batch file to ``out``; return annotations without a tag."""
        data = read_json(path)
        if not isinstance(data, dict):
            raise InvalidInputError(
                f"A FaithBench batch must be an object with 'samples'. "
                f"Got {type(data).__name__} instead.",
                path=path,
            )
        samples = field_of(data, "samples", list, path=path, line=None)
        for i, sample in enumerate(samples):
            as_object(sample, "sample", path=path, field=f"samples[{i}]")
        annotators = _batch_annotators(samples, path)
        sources: dict[str, str] = {}
        shots: dict[str, list[dict[str, Any]]] = {}
        ids = IdMaker()
        unlabelled = 0
        for i, sample in enumerate(samples):
            prefix = f"samples[{i}]."
            source = field_of(sample, "source", str, path=path, line=None, prefix=prefix)
            summary = field_of(sample, "summary", str, path=path, line=None, prefix=prefix)
            sample_id = field_of(
                sample, "sample_id", (int, str), path=path, line=None, prefix=prefix
            )
            meta = field_of(sample, "metadata", dict, path=path, line=None, prefix=prefix)
            model = field_of(
                meta, "summarizer", str, path=path, line=None, prefix=f"{prefix}metadata."
            )
            if source not in sources:
                sources[source] = f"faithbench/{batch}/{len(sources)}"
                shots[source] = []
                out.examples.append(
                    Example(
                        example_id=sources[source],
                        dataset=self.name,
                        task="summary",
                        context=source,
                        meta={"batch": batch, ANNOTATED: shots[source]},
                    )
                )
            response_id = ids.make(f"{sources[source]}/{model}")
            out.responses.append(
                Response(
                    response_id=response_id,
                    example_id=sources[source],
                    model=model,
                    text=summary,
                    meta={
                        "batch": batch,
                        "sample_id": sample_id,
                        "faithbench_id": f"{batch}-{sample_id}",
                        "raw_sample_id": meta.get("raw_sample_id"),
                    },
                )
            )
            first = len(out.labels)
            unlabelled += self._labels(sample, response_id, annotators, path, prefix, out)
            human = next(lab for lab in out.labels[first:] if lab.labeler == "human")
            shots[source].append(_annotated(response_id, model, summary, sample, human.category))
            out.scores.extend(self._scores(meta, response_id))
            out.labels.extend(self._judge_labels(meta, response_id))
        return unlabelled

    def _labels(
        self,
        sample: dict[str, Any],
        response_id: str,
        annotators: dict[str, str],
        path: Path,
        prefix: str,
        out: Bundle,
    ) -> int:
        annotations = field_of(sample, "annotations", list, path=path, line=None, prefix=prefix)
        mine: dict[str, list[dict[str, Any]]] = {key: [] for key in annotators.values()}
        worst: dict[str, int] = dict.fromkeys(annotators.values(), 0)
        unlabelled = 0
        for j, ann in enumerate(annotations):
            key = annotators[ann["annotator_id"]]
            tags = field_of(
                ann, "label", list, path=path, line=None, prefix=f"{prefix}annotations[{j}]."
            )
            severity = annotation_severity([str(t) for t in tags])
            if severity is None:
                unlabelled += 1
            else:
                worst[key] = max(worst[key], severity)
            mine[key].append(ann)
        mapping = PROTOCOLS[self.protocol]
        for key, severity in worst.items():
            out.labels.append(
                self._label(response_id, f"human:{key}", mapping[severity], severity, mine[key])
            )
        severities = list(worst.values())
        for name, proto_map in PROTOCOLS.items():
            agg = majority_severity if name == "majority" else worst_severity
            labeler = f"human[protocol={name}]"
            raw = dict(worst.items())
            if not severities:
                error = "no annotator annotated any summary of this batch"
                out.labels.append(self._label(response_id, labeler, None, None, raw, error))
                if name == self.protocol:
                    out.labels.append(self._label(response_id, "human", None, None, raw, error))
                continue
            severity = agg(severities)
            out.labels.append(self._label(response_id, labeler, proto_map[severity], severity, raw))
            if name == self.protocol:
                out.labels.append(
                    self._label(response_id, "human", proto_map[severity], severity, raw)
                )
        return unlabelled

    def _label(
        self,
        response_id: str,
        labeler: str,
        hallucinated: bool | None,
        severity: int | None,
        raw: Any,
        error: str = "",
    ) -> Label:
        return Label(
            response_id=response_id,
            labeler=labeler,
            hallucinated=hallucinated,
            category="" if severity is None else SEVERITY[severity],
            raw=json.dumps(raw, ensure_ascii=False, sort_keys=True),
            error=error,
            spec=self.spec_json,
        )

    def _scores(self, meta: dict[str, Any], response_id: str) -> list[Score]:
        scores = []
        for name in RECORDED:
            value = meta.get(name)
            usable = isinstance(value, int | float) and not isinstance(value, bool)
            if isinstance(value, int | float) and usable and math.isfinite(value):
                flipped, error = 1.0 - float(value), ""
            else:
                flipped = None
                error = f"FaithBench records no numeric {name} for this summary (got {value!r})"
            scores.append(
                Score(
                    response_id=response_id,
                    detector=f"recorded:{name}",
                    value=flipped,
                    error=error,
                    spec=spec_json("recorded", {"source": name}, source=self.spec),
                )
            )
        return scores

    def _judge_labels(self, meta: dict[str, Any], response_id: str) -> list[Label]:
        """The GPT judges' recorded 1/0 verdicts (1 = consistent) as labels."""
        labels = []
        for name in JUDGES:
            value = meta.get(name)
            if value in (0, 1) and not isinstance(value, bool):
                hallucinated: bool | None = value == 0
                category, error = ("inconsistent" if hallucinated else "consistent"), ""
            else:
                hallucinated, category = None, ""
                error = f"FaithBench records no 1/0 {name} verdict for this summary (got {value!r})"
            labels.append(
                Label(
                    response_id=response_id,
                    labeler=f"recorded:{name}",
                    hallucinated=hallucinated,
                    score=None if hallucinated is None else float(hallucinated),
                    category=category,
                    raw=json.dumps({name: value}),
                    error=error,
                    spec=spec_json("recorded", {"source": name}, source=self.spec),
                )
            )
        return labels

    def _notes(self, unlabelled: int) -> list[str]:
        return [
            "Annotators of a batch = everyone with at least one annotation in that batch; a "
            "summary an annotator left unmarked counts as Consistent for that annotator "
            "(this reproduces FaithBench.csv's best-label on 14 of 15 batches).",
            "Per annotator (`human:<name>`): the most severe label among their annotations of "
            "the summary (Unwanted > Questionable > Benign > Consistent), mapped to "
            f"hallucinated as the chosen protocol ({self.protocol}) does. Annotator keys are "
            "lower-cased names, because FaithBench's annotator ids change from batch to batch.",
            "`human[protocol=majority]`: the most frequent per-annotator label; a tie goes to "
            "the more severe label (this reproduces FaithJudge's "
            "computed_ground_truth_label_majority on 719 of 720 summaries). Unwanted -> "
            "hallucinated, Consistent -> not; a Benign or Questionable majority -> None "
            "(excluded), its category kept.",
            "`human[protocol=worst]`: the most severe label over all annotators; Unwanted and "
            "Questionable -> hallucinated, Benign and Consistent -> not.",
            f"`human` is `human[protocol={self.protocol}]`.",
            f"Each example's meta['{ANNOTATED}'] lists its summaries with their human "
            "annotations (span, label, note) and the `human` label as a ternary verdict "
            "(Consistent -> consistent, Benign or Questionable -> benign, Unwanted -> unwanted), "
            "for few-shot judges such as faithjudge, which never show a summary its own entry.",
            f"{unlabelled} annotation(s) carry no label tag; they mark a span but add no severity.",
            "Recorded detectors (recorded:<name>, from each sample's metadata) are 'high = "
            "consistent' (HHEM probabilities; 1/0 verdicts for TrueTeacher and TRUE NLI); "
            "each is stored as 1 - value so that higher = more likely hallucinated. A "
            "missing or non-numeric value is None with an error.",
            "The GPT judges' verdicts (" + ", ".join(f"recorded:{n}" for n in JUDGES) + ") are "
            "labels, not detector scores (0 -> hallucinated, category 'inconsistent'; 1 -> "
            "not, 'consistent'; score = 1 - verdict), so labeler agreement measures them "
            "against both human protocols and any of them can be the reference.",
        ]


def _annotated(
    response_id: str, model: str, summary: str, sample: dict[str, Any], severity: str
) -> dict[str, Any]:
    """Return one summary with its human annotations, as an entry of ``meta[ANNOTATED]``."""
    seen: set[tuple[str, str, str, str]] = set()
    annotations = []
    for ann in sample["annotations"]:
        entry = {
            "span": str(ann.get("summary_span") or ""),
            "source_span": str(ann.get("source_span") or ""),
            "label": ", ".join(str(t) for t in ann["label"]),
            "note": str(ann.get("note") or "").strip(),
        }
        key = (entry["span"], entry["source_span"], entry["label"], entry["note"])
        if key not in seen:  # two annotators often leave the same mark
            seen.add(key)
            annotations.append(entry)
    return {
        "response_id": response_id,
        "model": model,
        "text": summary,
        "verdict": VERDICTS.get(severity, ""),
        "human_label": severity,
        "annotations": annotations,
    }


def _batch_annotators(samples: list[dict[str, Any]], path: Path) -> dict[str, str]:
    """Map each annotator id of a batch to its label key suffix (the slugged name)."""
    names: dict[str, str] = {}
    for i, sample in enumerate(samples):
        annotations = field_of(
            sample, "annotations", list, path=path, line=None, prefix=f"samples[{i}]."
        )
        for j, ann in enumerate(annotations):
            prefix = f"samples[{i}].annotations[{j}]."
            as_object(ann, "annotation", path=path, field=prefix.rstrip("."))
            annotator = field_of(ann, "annotator_id", str, path=path, line=None, prefix=prefix)
            name = field_of(ann, "annotator_name", str, path=path, line=None, prefix=prefix)
            names.setdefault(annotator, name)
    slugs = Counter(_slug(n) for n in names.values())
    return {
        a: _slug(n) if slugs[_slug(n)] == 1 else f"{_slug(n)}-{a[:8]}"
        for a, n in sorted(names.items(), key=lambda kv: (_slug(kv[1]), kv[0]))
    }
