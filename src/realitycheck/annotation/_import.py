"""``annotate import``: people's verdicts into a run, as labels, with their agreement.

Each annotator of a file becomes the labels ``human:<annotator>`` (spec
``annotation_import`` naming the file and its SHA-256; ``raw`` holds the
verdict as written, the note, the item and where it was in the file). Then
the aggregate (``human`` unless ``into`` names ``human[protocol=<name>]``) is
computed again over every imported annotator of every round, by the
``files`` dataset's rules, after dropping the least reliable annotators by
Dawid–Skene if asked. Only labels that differ from the stored ones are
written, so importing a file twice changes nothing, and a second round's
file adds its annotators and items to the first's.

Checks, before anything is written: every item must be a response of this
run, exported in a round of this run (the round id a file carries), whose
item id matches its response id; otherwise the import is refused (with
``skip_unknown`` such items are left out and counted). A ``human`` or
``human:<name>`` label the dataset shipped is never replaced silently: the
import is refused unless ``replace`` is set (or ``into`` names another key).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from realitycheck import analysis as A
from realitycheck.annotation._agreement import (
    aggregate_votes,
    agreement,
    fit_or_none,
    weakest,
)
from realitycheck.annotation._label_studio import Annotation
from realitycheck.annotation._names import AGGREGATES
from realitycheck.annotation._result import ImportReport, save_agreement
from realitycheck.annotation._sources import FileRead, read_source, resolve
from realitycheck.errors import InvalidInputError
from realitycheck.params import InstanceOf, Interval, OneOf, OrNone, Satisfies, check_arg
from realitycheck.records import Label
from realitycheck.records.keys import HUMAN, LabelKey, annotator_key
from realitycheck.store import RunStore

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AGGREGATE_SPEC", "SOURCE_SPEC", "import_annotations"]

SOURCE_SPEC = "annotation_import"
"""Spec name of an annotator's label read from a file."""
AGGREGATE_SPEC = "annotation"
"""Spec name of the aggregate of imported annotators."""
_OWNER = "annotate import"


def _spec(name: str, params: dict[str, Any]) -> str:
    return json.dumps({"name": name, "params": params, "version": "1"}, sort_keys=True)


def _spec_name(spec: Any) -> str:
    try:
        value = json.loads(spec) if isinstance(spec, str) else {}
    except json.JSONDecodeError:
        return ""
    return str(value.get("name", "")) if isinstance(value, dict) else ""


def _annotator_label(rid: str, a: Annotation, source: dict[str, Any]) -> Label:
    category = {True: "hallucinated", False: "faithful", None: "cant_tell"}[a.hallucinated]
    raw = {"verdict": a.verdict, "note": a.note, "item_id": a.item_id, "round": a.round}
    return Label(
        response_id=rid,
        labeler=annotator_key(a.annotator),
        hallucinated=a.hallucinated,
        category=category,
        raw=json.dumps(raw | {"where": a.where}, ensure_ascii=False, sort_keys=True),
        error="" if a.hallucinated is not None else "the annotator could not tell",
        spec=_spec(SOURCE_SPEC, source),
    )


def _same(label: Label, row: dict[str, Any]) -> bool:
    score = row.get("score")
    score = None if score is None or (isinstance(score, float) and np.isnan(score)) else score
    stored = (row.get("hallucinated"), score, row.get("category"), row.get("raw"), row.get("error"))
    mine = (label.hallucinated, label.score, label.category, label.raw, label.error)
    return stored == mine and row.get("spec") == label.spec


def _check_shipped(
    stored: pd.DataFrame, keys: set[tuple[str, str]], replace: bool, into: str
) -> None:
    """Refuse to replace labels a dataset shipped (a spec that is not an import's)."""
    if replace or stored.empty:
        return
    ours = {SOURCE_SPEC, AGGREGATE_SPEC}
    hits = [
        (r, k)
        for r, k, s in zip(stored["response_id"], stored["labeler"], stored["spec"], strict=True)
        if (r, k) in keys and _spec_name(s) not in ours
    ]
    if hits:
        rid, key = hits[0]
        raise InvalidInputError(
            f"The run holds {len(hits)} label(s) a dataset shipped under the keys this import "
            f"writes (e.g. {key!r} of {rid!r}). Nothing was written. Pass --replace to replace "
            "them with the imported ones, or --into 'human[protocol=NAME]' to keep the "
            f"aggregate apart (now {into!r}).",
            field="--replace",
        )


def _validate(aggregate: str, drop_weakest: int, min_reliability: float | None, into: str) -> None:
    check_arg(aggregate, OneOf(AGGREGATES), name="aggregate", owner=_OWNER)
    check_arg(drop_weakest, Interval(int, 0), name="drop_weakest", owner=_OWNER)
    check_arg(min_reliability, OrNone(Interval(float, 0, 1)), name="min_reliability", owner=_OWNER)
    check_arg(
        into,
        Satisfies(
            lambda k: LabelKey.parse(k).is_human_aggregate, "'human' or 'human[protocol=NAME]'"
        ),
        name="into",
        owner=_OWNER,
    )


def import_annotations(
    store: RunStore,
    files: Sequence[str | Path],
    *,
    aggregate: str = "majority",
    drop_weakest: int = 0,
    min_reliability: float | None = None,
    into: str = HUMAN,
    replace: bool = False,
    skip_unknown: bool = False,
) -> ImportReport:
    """Import annotated files into a run; aggregate every imported annotator into ``into``.

    Args:
        store: The run.
        files: Label Studio JSON exports (``.json``), or filled ``.csv`` / ``.jsonl`` files.
        aggregate: One of :data:`AGGREGATES`.
        drop_weakest: Leave this many least reliable annotators (Dawid–Skene) out of the aggregate.
        min_reliability: Also leave out annotators whose Dawid–Skene reliability
            ((sensitivity + specificity) / 2, in [0, 1]) is below it.
        into: The aggregate's key: ``human`` or ``human[protocol=NAME]``.
        replace: Replace labels a dataset shipped under the same keys.
        skip_unknown: Leave out (and count) items that are not of this run instead of refusing.

    Raises:
        InvalidInputError: A bad argument or file (naming file, line or task, and
            field), items not of this run, or shipped labels without ``replace``.
            Nothing is written then.
        MissingDependencyError: Dawid–Skene was asked for and crowd-kit is missing.
    """
    _validate(aggregate, drop_weakest, min_reliability, into)
    check_arg(replace, InstanceOf(bool), name="replace", owner=_OWNER)
    if not files:
        raise InvalidInputError(f"{_OWNER} needs at least one file.")
    report = ImportReport(files=[], into=into)
    new = _read_all(store, [Path(f) for f in files], report, skip_unknown=skip_unknown)
    stored = store.frame("labels")
    items, keys, matrix = _matrix(stored, new)
    if not items:
        left = sum((Counter(f.skipped) for f in report.files), Counter())
        raise InvalidInputError(
            f"No verdict to import: {', '.join(f.path.name for f in report.files)} hold none"
            + (f" ({', '.join(f'{n} {why}' for why, n in left.items())})" if left else "")
            + ". Fill in the annotator and verdict columns, or annotate the tasks, first.",
            path=report.files[0].path,
        )
    _check_shipped(stored, set(new) | {(r, into) for r in items}, replace, into)
    wants_ds = bool(drop_weakest or min_reliability is not None)
    fit = A.dawid_skene(matrix) if wants_ds else fit_or_none(matrix, report.notes)
    names = [LabelKey.parse(k).annotator or k for k in keys]
    dropped = []
    if fit is not None and wants_ds:
        dropped = weakest(names, fit, drop_weakest=drop_weakest, min_reliability=min_reliability)
    kept = [j for j, n in enumerate(names) if n not in dropped]
    verdicts, scores = aggregate_votes(matrix[:, kept], aggregate)
    params = {
        "aggregate": aggregate,
        "annotators": [names[j] for j in kept],
        "dropped": dropped,
        "drop_weakest": drop_weakest,
        "min_reliability": min_reliability,
    }
    # The annotators are in the manifest, not in the spec: a later round's annotators
    # change the labels of the items they annotated only.
    spec = _spec(AGGREGATE_SPEC, {k: v for k, v in params.items() if k != "annotators"})
    for i, rid in enumerate(items):
        shown = {names[j]: _word(matrix[i, j]) for j in kept if not np.isnan(matrix[i, j])}
        new[(rid, into)] = _aggregate_label(rid, into, verdicts[i], scores, i, shown, spec)
    _write(store, new, stored, report)
    report.annotators, report.dropped = names, dropped
    report.counts = {
        "hallucinated": int(np.sum(verdicts == 1.0)),
        "faithful": int(np.sum(verdicts == 0.0)),
        "no verdict": int(np.sum(np.isnan(verdicts))),
    }
    report.agreement = agreement(matrix, names, fit, dropped, report.notes)
    report.result_dir = save_agreement(store, report, aggregate=aggregate, n_items=len(items))
    _record_import(store, report, params)
    return report


def _read_all(
    store: RunStore, files: list[Path], report: ImportReport, *, skip_unknown: bool
) -> dict[tuple[str, str], Label]:
    """Read every file into annotator labels by (response id, key); a later file wins."""
    new: dict[tuple[str, str], Label] = {}
    foreign: list[str] = []
    for path in files:
        fmt, sha, found, skipped = read_source(path)
        ok, left = resolve(store, path, found)
        foreign += left
        source = {"file": path.name, "sha256": sha, "format": fmt}
        for rid, a in ok:
            label = _annotator_label(rid, a, source)
            key = (rid, label.labeler)
            if key in new and new[key].hallucinated != label.hallucinated:
                report.notes.append(
                    f"{label.labeler} on {rid!r}: {path.name} replaces an earlier file's verdict"
                )
            new[key] = label
        report.files.append(FileRead(path, fmt, sha, len(ok), dict(skipped)))
    if foreign and not skip_unknown:
        raise InvalidInputError(
            f"{len(foreign)} annotation(s) are not items exported from this run; nothing was "
            f"written. First: {foreign[0]}. Pass --skip-unknown to import the others.",
            field="response_id",
        )
    report.foreign = len(foreign)
    report.notes += [f"left out: {line}" for line in foreign[:5]]
    return new


def _matrix(
    stored: pd.DataFrame, new: dict[tuple[str, str], Label]
) -> tuple[list[str], list[str], np.ndarray]:
    """Items x annotator keys of every imported verdict (stored ones, then the new ones)."""
    imported = stored[[_spec_name(s) == SOURCE_SPEC for s in stored["spec"]]]
    votes: dict[tuple[str, str], float] = {
        (r, k): _value(h)
        for r, k, h in zip(
            imported["response_id"], imported["labeler"], imported["hallucinated"], strict=True
        )
    }
    votes |= {k: _value(v.hallucinated) for k, v in new.items()}
    items = sorted({r for r, _ in votes})
    keys = sorted({k for _, k in votes})
    matrix = np.full((len(items), len(keys)), np.nan)
    row_of, col_of = {r: i for i, r in enumerate(items)}, {k: j for j, k in enumerate(keys)}
    for (r, k), v in votes.items():
        matrix[row_of[r], col_of[k]] = v
    return items, keys, matrix


def _value(verdict: Any) -> float:
    return np.nan if verdict is None or verdict != verdict else float(verdict)


def _aggregate_label(
    rid: str,
    into: str,
    value: float,
    scores: np.ndarray | None,
    i: int,
    shown: dict[str, str],
    spec: str,
) -> Label:
    verdict = None if np.isnan(value) else bool(value == 1.0)
    return Label(
        response_id=rid,
        labeler=into,
        hallucinated=verdict,
        score=None if scores is None or np.isnan(scores[i]) else float(scores[i]),
        category="" if verdict is None else ("hallucinated" if verdict else "faithful"),
        raw=json.dumps(shown, ensure_ascii=False, sort_keys=True),
        error="" if verdict is not None else "no verdict from a kept annotator",
        spec=spec,
    )


def _write(
    store: RunStore,
    new: dict[tuple[str, str], Label],
    stored: pd.DataFrame,
    report: ImportReport,
) -> None:
    """Append the labels that differ from the stored ones (none: nothing is written)."""
    records: list[dict[str, Any]] = stored.to_dict("records")  # type: ignore[assignment]
    rows = {(r["response_id"], r["labeler"]): r for r in records}
    changed = []
    for key, label in sorted(new.items()):
        before = rows.get(key)
        if before is not None and _same(label, before):
            report.unchanged += 1
            continue
        changed.append(label)
        if before is None:
            report.added += 1
        else:
            report.changed += 1
    if changed:
        store.append(changed)
        store.compact("labels")


def _word(value: float) -> str:
    return "no verdict" if np.isnan(value) else "hallucinated" if value == 1.0 else "faithful"


def _record_import(store: RunStore, report: ImportReport, params: dict[str, Any]) -> None:
    annotation = dict(store.read_manifest().get("config", {}).get("annotation") or {})
    imports = dict(annotation.get("imports") or {})
    for f in report.files:
        imports[f.sha256] = {"file": f.path.name, "format": f.format, "annotations": f.annotations}
    annotation |= {
        "imports": imports,
        "aggregate": {"into": report.into, **params},  # not "key": a secret-like name
    }
    store.update_manifest(config={"annotation": annotation})
