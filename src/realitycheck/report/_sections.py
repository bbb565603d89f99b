"""The descriptive sections: run information, data overview and notes."""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from realitycheck.records.keys import LabelKey
from realitycheck.report._cells import WRONG_WAY
from realitycheck.report._data import ReportData, proxy_model, shown_key, unmatched
from realitycheck.report._document import (
    Block,
    Bullets,
    Fold,
    FoldEnd,
    Heading,
    Link,
    Paragraph,
    Table,
    fmt_count,
    fmt_rate,
    is_missing,
)

__all__ = [
    "dataset_entries",
    "header_section",
    "notes_section",
    "overview_section",
    "title_section",
]

_LONG = 300


def _short(text: str, limit: int = _LONG) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    return _short(json.dumps(value, sort_keys=True, default=str))


def dataset_entries(data: ReportData) -> dict[str, list[tuple[str, Mapping[str, Any]]]]:
    """Return the manifest's dataset entries grouped by the dataset name they describe.

    An entry is matched by its key, else by the run name it records (a
    ``files`` dataset is named after its path or ``name=``), else by its spec
    name; entries that match no dataset of the run are grouped under the
    empty string.
    """
    names = set(data.datasets())
    out: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for key, entry in sorted(dict(data.manifest.get("datasets") or {}).items()):
        entry = entry if isinstance(entry, Mapping) else {}
        candidates = (key, entry.get("name", ""), (entry.get("spec") or {}).get("name", ""))
        name = next((c for c in candidates if c in names), "")
        out.setdefault(name, []).append((key, entry))
    return out


def _measured(data: ReportData) -> set[str]:
    """Return the labeler and detector keys with at least one value in the run."""
    keys: set[str] = set()
    for table, column, value in (
        (data.labels, "labeler", "hallucinated"),
        (data.scores, "detector", "value"),
    ):
        if not table.empty:
            keys.update(table.loc[table[value].notna(), column].astype(str))
    return keys


def _method(
    evaluate: Mapping[str, Any],
    measured: set[str] | None = None,
    shown: Callable[[str], str] = str,
) -> list[str]:
    boot = evaluate.get("bootstrap", {})
    conf = boot.get("confidence", 0.95)
    cal = evaluate.get("calibration_fraction", 0.5)
    items = [
        "Positive class: hallucinated. Every detector score is oriented so that higher means "
        "more likely hallucinated.",
        f"Confidence intervals: percentile bootstrap over responses, "
        f"{boot.get('n_resamples', '?')} resamples, {100 * float(conf):g}% level, "
        f"seed {boot.get('seed', '?')}; the studies use the same settings. "
        "Shown as value [low, high].",
        "AUROC, PR-AUC (average precision) and PRR use every response that has both a "
        "reference label and a score; the others are counted as excluded. PRR is the "
        "prediction-rejection ratio as LM-Polygraph defines it: rejecting responses by "
        "decreasing score, the area under the accuracy of the kept ones, between a random "
        "rejection (0) and an oracle that rejects the hallucinated ones first (1). Beside each "
        "PR-AUC, its base rate: the share of hallucinated responses among those it used, the "
        "PR-AUC of a random score. An AUROC whose whole confidence interval lies below 0.5 is "
        f"marked {WRONG_WAY}: the score ranks the responses the wrong way round (higher = less "
        "likely hallucinated), usually a sign that it should have been negated; an AUROC "
        "without an interval is not judged.",
        _calibration_method(evaluate),
        f"Thresholded metrics are computed on the test split only, at a threshold chosen on "
        f"the calibration split to maximise {evaluate.get('threshold_objective', '?')}; "
        f"detectors whose scores are all 0 or 1 use the fixed threshold 0.5. The split is by "
        f"example (a hash of the example id), {100 * float(cal):g}% of examples in the "
        f"calibration split, so all responses to one source fall on the same side.",
        "Slices: all responses, then each task and each generating model (when a dataset "
        "has several).",
    ]
    for name in ("detectors", "labelers", "references"):
        chosen = [str(k) for k in evaluate.get(name) or ()]
        if not chosen:
            continue
        empty = [k for k in chosen if measured is not None and k not in measured]
        ran = [k for k in chosen if k not in empty]
        if ran:
            items.append(f"Only these {name} were evaluated: {', '.join(map(shown, ran))}.")
        if empty:
            items.append(
                f"These {name} were asked for but have no value for any response, so nothing "
                f"was measured for them: {', '.join(map(shown, empty))} (see the notes for why)."
            )
    return items


def _calibration_method(evaluate: Mapping[str, Any]) -> str:
    method = evaluate.get("calibration", "platt")
    if method == "none":
        return (
            "ECE (10 equal-width bins) and the Brier score take each detector's score as a "
            "probability of hallucination as it is (calibration = none), on the test split; "
            "detectors with a value outside [0, 1] get neither."
        )
    name = {"platt": "Platt scaling", "isotonic": "isotonic regression"}.get(method, method)
    return (
        f"ECE (10 equal-width bins) and the Brier score judge probabilities: each detector's "
        f"score is first mapped to a probability of hallucination by {name} (scikit-learn), "
        "fitted on the calibration split of each dataset against each reference, then "
        "measured on the test split; each row's note gives the number of calibration-split "
        "responses fitted. PRR needs no calibration: it depends only on the order of scores."
    )


def title_section(data: ReportData, title: str) -> list[Block]:
    """Build the title and one line on the run: folder and dates."""
    m = data.manifest
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return [
        Heading(title, 1),
        Paragraph(
            (
                f"Run folder: {data.path.name}. Created {m.get('created', 'unknown')}, "
                f"last updated {m.get('updated', 'unknown')}; report written {now}. "
                "How the numbers were computed, the components and versions: ",
                Link("Run information", "#run-information"),
                ", at the end. Generators ranked: ",
                Link("leaderboard.html", "leaderboard.html"),
                ".",
            )
        ),
    ]


def header_section(data: ReportData) -> list[Block]:
    """Build the run information: method, components, settings, versions."""
    m = data.manifest
    out: list[Block] = [
        Heading("Run information", 2, anchor="run-information"),
        Heading("How the numbers were computed", 3),
    ]
    config = dict(m.get("config") or {})
    evaluate = config.pop("evaluate", None)
    if isinstance(evaluate, Mapping):
        shown = functools.partial(shown_key, data)
        out.append(Bullets(tuple(_method(evaluate, _measured(data), shown))))
    else:
        out.append(Paragraph("Not available: the manifest holds no evaluate settings."))
    components = dict(m.get("components") or {})
    out.append(Heading("Components", 3))
    if components:
        out.append(_components_table(data, components))
    else:
        out.append(Paragraph("Not available: the manifest lists no labeler or detector."))
    datasets = dict(m.get("datasets") or {})
    if datasets:
        counted = ("examples", "responses", "labels", "scores")
        loaded: list[tuple[str, ...]] = []
        for key, entry in sorted(datasets.items()):
            entry = entry if isinstance(entry, Mapping) else {}
            spec = entry.get("spec") or {}
            counts = [fmt_count(entry[k]) if k in entry else "" for k in counted]
            loaded.append(
                (key, _json(spec.get("params", {})), str(spec.get("version", "")), *counts)
            )
        out.append(
            Table(
                columns=("dataset", "params", "version", *counted),
                rows=tuple(loaded),
                align="lllrrrr",
                caption="Datasets loaded into the run.",
            )
        )
    if config:
        settings = tuple((str(k), _json(v)) for k, v in sorted(config.items()))
        out.append(Table(columns=("setting", "value"), rows=settings, caption="Other settings."))
    versions = m.get("versions") or {}
    out.append(Heading("Versions", 3))
    if versions:
        out.append(Paragraph(", ".join(f"{k} {v}" for k, v in sorted(versions.items()))))
    else:
        out.append(Paragraph("Not available: the manifest lists no package versions."))
    return out


def _components_table(data: ReportData, components: Mapping[str, Any]) -> Table:
    """The component specs; a ``proxy`` column and its notes when a detector read a proxy's view."""
    specs = sorted(
        (str(key), spec if isinstance(spec, Mapping) else {}) for key, spec in components.items()
    )
    proxies = {key: proxy_model(data, key) for key, _ in specs}
    rows = [
        (key, str(s.get("name", "")), _json(s.get("params", {})), str(s.get("version", "")))
        for key, s in specs
    ]
    if not any(proxies.values()):
        return Table(columns=("key", "name", "params", "version"), rows=tuple(rows))
    notes: dict[str, str] = {}
    for key, s in specs:
        proxy = s.get("proxy")
        if proxies[key] is not None and isinstance(proxy, Mapping):
            notes.setdefault(
                str(proxies[key]),
                f"Proxy {proxies[key]}: backend {_json(proxy.get('backend', {}))}; "
                f"prompt: {_short(str(proxy.get('prompt', '')), 200)}.",
            )
    return Table(
        columns=("key", "name", "params", "version", "proxy"),
        rows=tuple((*row, proxies[key] or "") for row, (key, _) in zip(rows, specs, strict=True)),
        caption="Proxy: the local model that read the answers, teacher-forced after the "
        "prompt generation would have sent, for a detector of white-box features (log-probs, "
        "entropies, hidden states) on answers the run did not generate. Its scores measure "
        "how that model sees the answers, not the generator's own uncertainty.",
        footnotes=tuple(notes[m] for m in sorted(notes)),
    )


def _verdict_cells(row: pd.Series, keys: list[str]) -> list[str]:
    cells = []
    for key in keys:
        labelled, positive = row[f"labelled:{key}"], row[f"hallucinated:{key}"]
        cells.append(fmt_count(labelled))
        cells.append(
            "" if not labelled else f"{fmt_count(positive)} ({fmt_rate(row[f'rate:{key}'])})"
        )
    return cells


def _overview_table(rows: pd.DataFrame, keys: list[str], lead: tuple[str, ...]) -> Table:
    columns = [*lead, "examples", "responses"]
    for key in keys:
        columns += [f"labelled ({key})", f"hallucinated ({key})"]
    body = tuple(
        (
            *(str(r[c]) for c in lead),
            fmt_count(r["examples"]),
            fmt_count(r["responses"]),
            *_verdict_cells(r, keys),
        )
        for _, r in rows.iterrows()
    )
    return Table(
        columns=tuple(columns),
        rows=body,
        align="l" * len(lead) + "r" * (len(columns) - len(lead)),
        csv="overview.csv",
    )


def _coverage_table(data: ReportData, cov: pd.DataFrame) -> Table:
    # The unreadable column shows where a component asks a model or a reply was unreadable.
    asks = bool(cov["llm_backed"].any() or (cov["unreadable"] > 0).any())
    rows = tuple(
        (
            str(r["kind"]),
            f"human:<annotator> ({r['components']} annotators)"
            if r["key"] == "human:*"
            else shown_key(data, str(r["key"])),
            fmt_count(r["records"]),
            fmt_count(r["missing"]),
            "" if is_missing(r["positive_rate"]) else fmt_rate(r["positive_rate"]),
            *([fmt_count(r["unreadable"]) if r["llm_backed"] or r["unreadable"] else ""] * asks),
        )
        for _, r in cov.iterrows()
    )
    columns: tuple[str, ...] = ("kind", "key", "records", "missing value", "says hallucinated")
    caption = "Labels and scores stored for this dataset (a missing value keeps its error)."
    if asks:
        columns += ("unreadable replies",)
        caption += (
            " Unreadable replies: records with a model reply that could not be read (no "
            "verdict, or a yes/no reply that is neither), whatever value they were given."
        )
    return Table(
        columns=columns,
        rows=rows,
        align="llrrr" + "r" * asks,
        caption=caption,
        csv="coverage.csv",
    )


def overview_section(
    data: ReportData, overview: pd.DataFrame, cov: pd.DataFrame, keys: list[str]
) -> list[Block]:
    """Build the data overview: counts and hallucination rates, dataset notes, coverage."""
    out: list[Block] = [Heading("Data overview", 2)]
    if overview.empty:
        out.append(Paragraph("Not available: the run holds no examples or responses."))
        return out
    if not keys:
        out.append(Paragraph("No human labels are stored: hallucination rates are not available."))
    totals = overview[(overview["task"] == "all") & (overview["model"] == "all")]
    out.append(_overview_table(totals, keys, ("dataset",)))
    entries = dataset_entries(data)
    for ds in overview["dataset"].drop_duplicates():
        out.append(Heading(ds, 3))
        out.append(Fold(f"{ds} per task and model, how it was mapped, what is stored"))
        parts = overview[(overview["dataset"] == ds) & (overview["model"] != "all")]
        if not parts.empty:
            here = [k for k in keys if parts[f"labelled:{k}"].sum() > 0]
            out.append(_overview_table(parts, here or keys[:1], ("task", "model")))
        notes = [
            f"{key}: {note}"
            for key, entry in entries.get(ds, [])
            for note in entry.get("notes") or []
        ]
        if notes:
            out.append(Paragraph("How the dataset was mapped:"))
            out.append(Bullets(tuple(notes)))
        part = cov[cov["dataset"] == ds]
        if not part.empty:
            out.append(_coverage_table(data, part))
        out.append(FoldEnd())
    return out


def notes_section(data: ReportData, cov: pd.DataFrame) -> list[Block]:
    """Build the notes: manifest notes, unmatched ids, failures and undefined metrics."""
    items = [str(n) for n in data.manifest.get("notes") or []]
    items += unmatched(data)
    for key, entry in dataset_entries(data).get("", []):
        for note in entry.get("notes") or []:
            items.append(f"{key}: {note}")
    for _, r in cov[cov["missing"] > 0].iterrows():
        error = _short(str(r["most_common_error"]), 200)
        if not error and LabelKey.parse(str(r["key"])).is_human:
            continue  # human verdicts left open by the protocol; the dataset notes say why
        items.append(
            f"{r['kind']} {shown_key(data, str(r['key']))} on {r['dataset']}: "
            f"{r['missing']} of {r['records']} "
            "values missing" + (f"; most common error: {error}" if error else ".")
        )
    for name, table in (("metrics", data.metrics), ("agreement", data.agreement)):
        undefined = table[table["value"].isna()] if not table.empty else table
        if not undefined.empty:
            items.append(
                f"{len(undefined)} rows of the {name} table are undefined (NaN), "
                "usually because a slice holds one class only; they show as n/a."
            )
    out: list[Block] = [Heading("Notes", 2)]
    out.append(Bullets(tuple(items)) if items else Paragraph("Nothing to note."))
    return out
