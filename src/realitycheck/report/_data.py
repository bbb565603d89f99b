"""What the report reads from a run, and the data overview computed from it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pandas as pd

from realitycheck.records import INVALID, AgreementResult, MetricResult
from realitycheck.records.keys import LabelKey, annotator_key
from realitycheck.store import RunStore

__all__ = [
    "DatasetScores",
    "ReportData",
    "coverage",
    "dataset_scores",
    "human_keys",
    "llm_backed",
    "load",
    "overview",
    "proxy_model",
    "proxy_models",
    "shown_key",
    "verdicts",
]

_COLUMNS = {
    "examples": ("example_id", "dataset", "task"),
    "responses": ("response_id", "example_id", "model"),
    "labels": (
        "response_id",
        "labeler",
        "hallucinated",
        "score",
        "error",
        "category",
        "unreadable",
        "failed",
        "retryable",
    ),
    "scores": ("response_id", "detector", "value", "error", "unreadable", "failed", "retryable"),
}
# The metrics and agreement tables: every field of their record type, its key first.
_RESULT_COLUMNS = {
    cls.table: (*cls.key, *(f.name for f in fields(cls) if f.name not in cls.key))
    for cls in (MetricResult, AgreementResult)
}


@dataclass(frozen=True, kw_only=True)
class ReportData:
    """The tables of one run, trimmed to the columns the report uses.

    Attributes:
        path: The run folder.
        manifest: ``manifest.json`` (empty for a run without one).
        examples: ``example_id, dataset, task``.
        responses: ``response_id, example_id, model, dataset, task``; ``dataset``
            is missing for a response whose example the run does not hold.
        labels: ``response_id, labeler, hallucinated, score, error, category, unreadable``.
        scores: ``response_id, detector, value, error, unreadable``.
        metrics: The metrics table (MetricResult columns: ``detector``, and the
            ``labeler`` it is measured against).
        agreement: The agreement table (AgreementResult columns: ``labeler``,
            and the ``reference`` it is measured against).
        present: Names of the tables that hold at least one row.
    """

    path: Path
    manifest: Mapping[str, Any]
    examples: pd.DataFrame
    responses: pd.DataFrame
    labels: pd.DataFrame
    scores: pd.DataFrame
    metrics: pd.DataFrame
    agreement: pd.DataFrame
    present: frozenset[str]

    def datasets(self) -> list[str]:
        """Return every dataset named by an example, a response or a metric, sorted."""
        names = set(self.examples["dataset"].dropna())
        names |= set(self.responses["dataset"].dropna())
        names |= set(self.metrics["dataset"].dropna()) | set(self.agreement["dataset"].dropna())
        return sorted(str(n) for n in names)


def _trim(df: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    out = df.reindex(columns=list(columns))
    return out.reset_index(drop=True)


def load(store: RunStore) -> ReportData:
    """Read the tables of a run; a table that is absent reads as empty."""
    frames = {name: _trim(store.frame(name), cols) for name, cols in _COLUMNS.items()}
    present = {name for name, df in frames.items() if not df.empty}
    examples = frames["examples"].astype({"example_id": str, "dataset": str, "task": str})
    responses = frames["responses"].merge(
        examples.drop_duplicates("example_id"), on="example_id", how="left"
    )
    tables = {}
    for name, columns in _RESULT_COLUMNS.items():
        df = _trim(store.frame(name), columns)
        if not df.empty:
            present.add(name)
        keys = columns[: columns.index("metric")]  # the key's names, as text
        tables[name] = df.astype(dict.fromkeys(keys, str))
    return ReportData(
        path=store.path if store.remote is None else Path(store.remote.root),  # a name only
        manifest=store.read_manifest(),
        examples=examples,
        responses=responses,
        labels=frames["labels"],
        scores=frames["scores"],
        metrics=tables["metrics"],
        agreement=tables["agreement"],
        present=frozenset(present),
    )


def human_keys(data: ReportData, reference: str) -> list[str]:
    """Return the reference labeler, then the other human aggregates/protocols stored."""
    stored = set(data.labels["labeler"].dropna())
    others = sorted(k for k in stored if LabelKey.parse(str(k)).is_human_aggregate)
    keys = [reference] if reference in stored else []
    return keys + [k for k in others if k != reference]


def verdicts(data: ReportData, labeler: str) -> pd.Series:
    """Return 1.0 / 0.0 / NaN per response id of ``data.responses`` under one labeler."""
    rows = data.labels[data.labels["labeler"] == labeler]
    values = rows["hallucinated"].map({True: 1.0, False: 0.0}).astype(float)
    series = pd.Series(values.to_numpy(), index=rows["response_id"].to_numpy())
    series = series[~series.index.duplicated(keep="last")]
    return series.reindex(data.responses["response_id"].to_numpy())


class DatasetScores(NamedTuple):
    """A dataset's responses: the reference's verdicts and every detector's stored scores.

    Attributes:
        rows: Which rows of ``data.responses`` belong to the dataset, shape (N,).
        y: The reference's verdict on each of them: 1.0 hallucinated, 0.0
            not, NaN none; shape (n,), n = ``rows.sum()``.
        scores: Each detector's score on the same responses, shape (n,) (NaN
            where it stored none; the last stored one where it stored two),
            keyed in drawing order (see :func:`dataset_scores`).
    """

    rows: npt.NDArray[np.bool_]
    y: npt.NDArray[np.float64]
    scores: dict[str, npt.NDArray[np.float64]]


def dataset_scores(
    data: ReportData, dataset: str, reference: str, order: Sequence[str]
) -> DatasetScores:
    """Return ``reference``'s verdicts and every detector's scores on ``dataset``'s responses.

    Args:
        data: The run.
        dataset: Dataset name.
        reference: Labeler whose verdicts are the ground truth.
        order: Detectors in the order they should be drawn; the other stored
            ones follow, sorted.
    """
    in_ds = (data.responses["dataset"] == dataset).to_numpy()
    ids = data.responses["response_id"].to_numpy()[in_ds]
    y_all = verdicts(data, reference).to_numpy()[in_ds]
    scores = data.scores[data.scores["response_id"].isin(ids)]
    wide = (
        scores.drop_duplicates(["response_id", "detector"], keep="last")
        .pivot(index="response_id", columns="detector", values="value")
        .reindex(ids)
    )
    stored = sorted(str(d) for d in wide.columns)
    detectors = [d for d in order if d in stored] + [d for d in stored if d not in order]
    return DatasetScores(in_ds, y_all, {d: wide[d].to_numpy(dtype=float) for d in detectors})


def _group_row(
    dataset: str,
    task: str,
    model: str,
    examples: int,
    group: pd.DataFrame,
    keys: list[str],
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "dataset": dataset,
        "task": task,
        "model": model,
        "examples": examples,
        "responses": len(group),
    }
    for key in keys:
        v = group[f"v:{key}"].to_numpy(dtype=float)
        labelled = int(np.count_nonzero(~np.isnan(v)))
        positive = int(np.nansum(v)) if labelled else 0
        row[f"labelled:{key}"] = labelled
        row[f"hallucinated:{key}"] = positive
        row[f"rate:{key}"] = positive / labelled if labelled else float("nan")
    return row


def overview(data: ReportData, reference: str) -> pd.DataFrame:
    """Return the data overview: counts and hallucination rates per dataset, task, model.

    Each dataset has a total row (``task`` and ``model`` = ``all``; ``examples``
    counts every example of the dataset, answered or not), a row per task when
    there are several, and a row per task and model. For every human key (see
    :func:`human_keys`) three columns give the responses with a verdict, the
    hallucinated ones and their ratio.
    """
    keys = human_keys(data, reference)
    resp = data.responses.dropna(subset=["dataset"]).copy()
    for key in keys:
        resp[f"v:{key}"] = verdicts(data, key).to_numpy()[resp.index.to_numpy()]
    rows: list[dict[str, Any]] = []
    names = sorted(set(data.examples["dataset"]) | set(resp["dataset"]))
    for ds in names:
        group = resp[resp["dataset"] == ds]
        n_examples = int((data.examples["dataset"] == ds).sum())
        rows.append(_group_row(ds, "all", "all", n_examples, group, keys))
        tasks = sorted(group["task"].dropna().unique())
        for task in tasks:
            by_task = group[group["task"] == task]
            if len(tasks) > 1:
                n = int(by_task["example_id"].nunique())
                rows.append(_group_row(ds, str(task), "all", n, by_task, keys))
            for model in sorted(by_task["model"].dropna().unique()):
                part = by_task[by_task["model"] == model]
                n = int(part["example_id"].nunique())
                rows.append(_group_row(ds, str(task), str(model), n, part, keys))
    columns = ["dataset", "task", "model", "examples", "responses"]
    columns += [f"{m}:{k}" for k in keys for m in ("labelled", "hallucinated", "rate")]
    return pd.DataFrame(rows, columns=columns)


def _most_common(errors: pd.Series) -> str:
    errors = errors.dropna().astype(str)
    errors = errors[errors != ""]
    if errors.empty:
        return ""
    return str(errors.value_counts().index[0])


def _nests_a_model(spec: Any) -> bool:
    """Whether a component spec nests a model (a judge's backend, a panel's judges)."""
    params = spec.get("params") if isinstance(spec, Mapping) else None
    if not isinstance(params, Mapping):
        return False
    for value in params.values():
        for nested in value if isinstance(value, list | tuple) else (value,):
            if isinstance(nested, Mapping) and isinstance(nested.get("params"), Mapping):
                if "model" in nested["params"] or _nests_a_model(nested):
                    return True
    return False


def llm_backed(data: ReportData, key: str) -> bool:
    """Whether the component ``key`` asks a model (its spec in the manifest nests one)."""
    components = data.manifest.get("components") or {}
    return _nests_a_model(components.get(key)) if isinstance(components, Mapping) else False


def proxy_model(data: ReportData, key: str) -> str | None:
    """The proxy model whose reading of the answers component ``key`` scored, else ``None``.

    Read from the manifest (``components[key]["proxy"]["model"]``, written by
    the detect stage when a local model teacher-forced answers it did not
    generate, :class:`realitycheck.pipeline.ProxyModel`); ``None`` for a
    component that read the generator's own features, or none.
    """
    components = data.manifest.get("components")
    spec = components.get(key) if isinstance(components, Mapping) else None
    proxy = spec.get("proxy") if isinstance(spec, Mapping) else None
    model = proxy.get("model") if isinstance(proxy, Mapping) else None
    return None if model is None or str(model) == "" else str(model)


def proxy_models(data: ReportData) -> dict[str, str]:
    """Every component of the manifest scored through a proxy model: key -> model, sorted by key."""
    components = data.manifest.get("components")
    keys = sorted(str(k) for k in components) if isinstance(components, Mapping) else []
    found = {key: proxy_model(data, key) for key in keys}
    return {key: model for key, model in found.items() if model is not None}


def shown_key(data: ReportData, key: str) -> str:
    """The name a report shows for component ``key``: ``"perplexity (proxy: MODEL)"`` or ``key``.

    A detector scored on a proxy model's reading of answers it did not generate
    (:func:`proxy_model`) is named with that model wherever the report shows
    it (tables, findings, figure legends); CSV tables keep the raw key. The
    result is plain text from the run (the model's name is untrusted): the
    renderers escape it as they escape every key.
    """
    model = proxy_model(data, key)
    return key if model is None else f"{key} (proxy: {model})"


def _unreadable(group: pd.DataFrame, key: str) -> int:
    """Records with at least one unreadable reply (or labels of category ``invalid``).

    A recorded judge's (``recorded:<name>``) ``invalid`` category is its verdict
    on the response (it found the response invalid), not a reply read here.
    """
    count = pd.to_numeric(group["unreadable"], errors="coerce").fillna(0) > 0
    if "category" in group.columns and not LabelKey.parse(key).is_recorded:
        count |= group["category"].astype(str).eq(INVALID).to_numpy()
    return int(count.sum())


def _failed(group: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """Which records have no value because a call failed (``failed``, or ``retryable``)."""
    flags = [
        group[name].fillna(False).astype(bool).to_numpy()
        for name in ("failed", "retryable")
        if name in group.columns
    ]
    return np.logical_or.reduce(flags) if flags else np.zeros(len(group), dtype=bool)


def coverage(data: ReportData) -> pd.DataFrame:
    """Return per dataset and component: records stored, values missing, most common error.

    For labelers ``positive_rate`` is the share of verdicts that say hallucinated.
    ``unreadable`` counts records with at least one reply that could not be
    read (a label of category ``invalid`` among them); ``failed`` counts
    records without a value because a call failed (``most_common_failure`` is
    their commonest error); ``llm_backed`` says
    whether the component asks a model. Single annotators
    (``human:<name>``) are pooled into one row, key ``human:*``, with
    ``components`` counting them.
    """
    where = data.responses.set_index("response_id")["dataset"]
    where = where[~where.index.duplicated(keep="last")]
    rows: list[dict[str, Any]] = []
    for kind, table, column, value in (
        ("labeler", data.labels, "labeler", "hallucinated"),
        ("detector", data.scores, "detector", "value"),
    ):
        if table.empty:
            continue
        df = table.assign(dataset=where.reindex(table["response_id"].to_numpy()).to_numpy())
        df = df.dropna(subset=["dataset"])
        keys = df[column].astype(str)
        pooled = keys.map(
            {k: annotator_key("*") if LabelKey.parse(k).is_annotator else k for k in keys.unique()}
        )
        df = df.assign(pooled=pooled)
        for (ds, key), group in df.groupby(["dataset", "pooled"], sort=True):
            missing = group[value].isna()
            failed = _failed(group)
            row: dict[str, Any] = {
                "dataset": ds,
                "kind": kind,
                "key": key,
                "components": int(group[column].nunique()),
                "records": len(group),
                "missing": int(missing.sum()),
                "positive_rate": float("nan"),
                "unreadable": _unreadable(group, str(key)),
                "failed": int(failed.sum()),
                "llm_backed": llm_backed(data, str(key)),
                "most_common_error": _most_common(group["error"]),
                "most_common_failure": _most_common(group.loc[failed, "error"]),
            }
            if kind == "labeler" and not missing.all():
                row["positive_rate"] = float(group.loc[~missing, value].astype(bool).mean())
            rows.append(row)
    columns = ["dataset", "kind", "key", "components", "records", "missing", "positive_rate"]
    columns += ["unreadable", "failed", "llm_backed", "most_common_error", "most_common_failure"]
    return pd.DataFrame(rows, columns=columns)


def unmatched(data: ReportData) -> list[str]:
    """Return notes on records whose ids point at nothing the run holds."""
    notes = []
    orphans = data.responses[data.responses["dataset"].isna()]
    if not orphans.empty:
        ids = orphans["example_id"].astype(str).unique()[:3].tolist()
        notes.append(
            f"{len(orphans)} responses point at examples the run does not hold (e.g. {ids}); "
            "they are left out of every table."
        )
    known = set(data.responses["response_id"])
    for name, table in (("labels", data.labels), ("scores", data.scores)):
        stray = table[~table["response_id"].isin(known)]
        if not stray.empty:
            ids = stray["response_id"].astype(str).unique()[:3].tolist()
            notes.append(
                f"{len(stray)} {name} point at responses the run does not hold (e.g. {ids}); "
                "they are left out of every table."
            )
    return notes
