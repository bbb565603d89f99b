"""What the evaluate stage refuses: keys that name nothing, and an empty result.

A misspelt reference (``-r humn``) or threshold key (``--threshold lenght=5``)
used to measure nothing without a word; both are errors with "did you mean"
and the keys the run holds. A run that yields no metric rows says why.

A labeler or detector that was named and ran, but is not defined on a
dataset's responses (ROUGE-L without reference answers, source overlap
without a source) is *missing* there, not a mistake: :func:`unmeasured` says
why it has nothing, and evaluate measures the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from realitycheck.errors import InvalidInputError, did_you_mean
from realitycheck.pipeline._report import commonest_error
from realitycheck.records.keys import LabelKey, is_stored
from realitycheck.registry import Registry, parse_key

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from realitycheck.pipeline._evaluate_load import Frame
    from realitycheck.store import RunStore

__all__ = ["Unmeasured", "check_keys", "explain_empty", "unmeasured"]

# What each need of a component is, in words ("none has the reference answers it needs").
_NEEDS = {"references": "reference answers", "context": "source passages (context)"}


def _matches(key: str, have: Iterable[str]) -> bool:
    """Whether ``key`` names a stored column, or a family of them (``human``, ``recorded``)."""
    return any(h == key or LabelKey.parse(h).kind == key for h in have)


def _refuse(kind: str, option: str, key: str, have: Sequence[str]) -> InvalidInputError:
    hint = did_you_mean(key, list(have), cutoff=0.6)
    return InvalidInputError(
        f"The run holds no {kind} {key!r}.{hint} Its {kind}s: {', '.join(have) or 'none'}.",
        field=option,
    )


def check_keys(
    *,
    labelers: Sequence[str],
    detectors: Sequence[str] = (),
    references: Sequence[str] | None = None,
    reference: str | None = None,
    measured_labelers: Sequence[str] | None = None,
    measured_detectors: Sequence[str] | None = None,
    thresholds: Iterable[str] = (),
) -> None:
    """Raise when a reference, labeler, detector or threshold key names nothing in the run.

    Evaluate checks every key it was given; the report checks its
    ``reference`` alone (``check_keys(labelers=stored, reference=key)``), so
    both refuse a key with no labels in the same words.

    Args:
        labelers: Label keys stored in the run.
        detectors: Detector keys stored in the run.
        references: The references asked for (``None``: the default).
        reference: The one reference asked for, if any.
        measured_labelers: The labelers asked for, if any.
        measured_detectors: The detectors asked for, if any.
        thresholds: Detector keys given a fixed threshold.

    Raises:
        InvalidInputError: Naming the option, the key, the closest stored key and all of them.
    """
    labels, scores = sorted(labelers), sorted(detectors)
    checks = [
        ("labeler", "references", references or (), labels),
        ("labeler", "reference", [reference] if reference else [], labels),
        ("labeler", "labelers", measured_labelers or (), labels),
        ("detector", "detectors", measured_detectors or (), scores),
        ("detector", "thresholds", thresholds, scores),
    ]
    for kind, option, keys, have in checks:
        for key in keys:
            if not _matches(key, have):
                raise _refuse(kind, option, key, have)


def explain_empty(
    labels: pd.DataFrame, scores: pd.DataFrame, per_dataset: dict[str, tuple[list[str], list[str]]]
) -> str:
    """Say why no metric row came out: per dataset, the references and detectors with values.

    Args:
        labels: Verdicts, one column per labeler (NaN = none).
        scores: Values, one column per detector (NaN = none).
        per_dataset: ``dataset -> (references with verdicts, detectors with values)``.
    """
    parts = []
    for ds, (refs, dets) in sorted(per_dataset.items()):
        parts.append(
            f"{ds}: references with verdicts: {', '.join(refs) or 'none'}; "
            f"detectors with values: {', '.join(dets) or 'none'}"
        )
    empty_labels = [c for c in labels.columns if labels[c].isna().all()]
    empty_scores = [c for c in scores.columns if scores[c].isna().all()]
    if empty_labels:
        parts.append(f"labelers whose every label is empty (None): {', '.join(empty_labels)}")
    if empty_scores:
        parts.append(f"detectors whose every value failed: {', '.join(empty_scores)}")
    return (
        "The evaluation produced no metric rows. "
        + "; ".join(parts)
        + ". A metric needs a reference with verdicts and a detector with values on the "
        "same responses."
    )


@dataclass
class Unmeasured:
    """Why named labelers and detectors have no value on some dataset.

    Attributes:
        notes: One sentence per component and dataset where it gave nothing,
            e.g. "rouge_l gave no verdict on any response of halueval_general:
            none has the reference answers it needs (4507 responses)".
        labelers: The named labelers the run holds no label of because no
            response of any dataset has what they need: missing, not misspelt.
        detectors: The same for the named detectors.
    """

    notes: list[str] = field(default_factory=list)
    labelers: list[str] = field(default_factory=list)
    detectors: list[str] = field(default_factory=list)


def unmeasured(
    store: RunStore, frame: Frame, *, labelers: Sequence[str], detectors: Sequence[str]
) -> Unmeasured:
    """Say why each named labeler and detector has no value on any response of some dataset.

    For a dataset where the component stored records, the reason is the
    commonest error among them; where it stored none, the need its responses
    lack (the label and detect stages skip a response whose example has no
    reference answers, or no source, when the component needs them). Stored
    keys (``human…``, ``recorded…``) are not components and are left out.

    Args:
        store: The run (its examples and the records' errors are read here).
        frame: The run as evaluate reads it.
        labelers: The labeler keys the caller named.
        detectors: The detector keys the caller named.
    """
    from realitycheck.detectors import detectors as detector_registry
    from realitycheck.labelers import labelers as labeler_registry

    out = Unmeasured()
    datasets = frame.base["dataset"].to_numpy()
    rows_of = {ds: datasets == ds for ds in sorted(set(datasets))}
    lacking: dict[str, np.ndarray] = {}
    families = (
        ("labels", "verdict", frame.labels, labeler_registry, labelers, out.labelers),
        ("scores", "value", frame.scores, detector_registry, detectors, out.detectors),
    )
    for table, what, values, registry, keys, explained in families:
        for key in dict.fromkeys(k for k in keys if not is_stored(k)):
            held = key in values.columns
            given = values[key].notna().to_numpy() if held else None
            needs = _needs_of(registry, key)
            reasons: dict[str, str] = {}
            for ds, rows in rows_of.items():
                if given is not None and given[rows].any():
                    continue
                why = _commonest(store, table, key, frame, rows) if held else None
                if why is None and needs:
                    lacking = lacking or _lacking(store, frame)
                    if all(lacking[n][rows].all() for n in needs):
                        wanted = " and the ".join(_NEEDS[n] for n in needs)
                        why = f"none has the {wanted} it needs ({int(rows.sum())} responses)"
                if why is not None:
                    reasons[ds] = why
            out.notes += [
                f"{key} gave no {what} on any response of {ds}: {why}."
                for ds, why in reasons.items()
            ]
            if not held and len(reasons) == len(rows_of):
                explained.append(key)
    return out


def _needs_of(registry: Registry[Any], key: str) -> list[str]:
    """The needs of ``key``'s component that an example may lack (``references``…), sorted."""
    try:
        name, _ = parse_key(key)
    except InvalidInputError:
        return []
    if name not in registry:
        return []
    return sorted(n for n in registry.get(name).needs if n in _NEEDS)


def _lacking(store: RunStore, frame: Frame) -> dict[str, np.ndarray]:
    """Per need, whether each response of ``frame`` lacks it (its example has no references…)."""
    import numpy as np
    import pandas as pd
    import pyarrow.compute as pc

    examples = store.arrow("examples", columns=list(_NEEDS))
    ids = examples.column("example_id").to_pandas()
    have = {
        "references": pc.fill_null(pc.list_value_length(examples.column("references")), 0)
        .to_numpy()
        .astype(bool),
        "context": np.array(
            [bool((c or "").strip()) for c in examples.column("context").to_pylist()], dtype=bool
        ),
    }
    where = frame.base["example_id"]
    return {
        need: ~pd.Series(has, index=ids).reindex(where, fill_value=False).to_numpy(dtype=bool)
        for need, has in have.items()
    }


def _commonest(store: RunStore, table: str, key: str, frame: Frame, rows: np.ndarray) -> str | None:
    """The commonest error among ``key``'s records of the responses at ``rows``, counted.

    A label without a verdict and without an error counts by its category
    (``category 'refuse'``). ``None`` when the component stored no record there.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    column = "labeler" if table == "labels" else "detector"
    wanted = ["error", "category"] if table == "labels" else ["error"]
    stored = store.arrow(table, columns=wanted)
    mine = stored.filter(pc.equal(stored.column(column), pa.scalar(key)))
    ids = pa.array(frame.base["response_id"].to_numpy()[rows], pa.string())
    mine = mine.filter(pc.is_in(mine.column("response_id"), value_set=ids))
    if not mine.num_rows:
        return None
    errors = mine.column("error").to_pylist()
    categories = mine.column("category").to_pylist() if table == "labels" else [None] * len(errors)
    counts: dict[str, int] = {}
    for error, category in zip(errors, categories, strict=True):
        text = error or (f"category {category!r}" if category else "no error recorded")
        counts[text] = counts.get(text, 0) + 1
    found = commonest_error(counts)
    if found is None:  # pragma: no cover - mine has rows
        return None
    text, n = found
    return (
        f"{text} ({n} of {mine.num_rows} responses)"
        if n < mine.num_rows
        else f"{text} ({n} responses)"
    )
