"""``leaderboard.html``: generators ranked by how often they hallucinate, one standalone page.

Per dataset, one sortable table: each generator's hallucination rate under the
reference labels, overall and per task (when the dataset has several), with a
Wilson interval, and its rank range: the ranks it could take (1 = fewest
hallucinations), one generator ranked above another only where their
intervals do not overlap (:func:`realitycheck.studies.leaderboard.rank_ranges`),
so ``1–4`` marks a tie group and a single number a rank the intervals tell
apart. The frame keeps the strict competition rank too (``rank``; equal rates
share it, ``tied``). The rates count every response that has
a reference verdict, so they can differ from the leaderboard study's, which
also ranks under the other judges and among answers only. The page carries its
own style and script and links nothing outside it, so it can be put on a
static site as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from realitycheck.metrics import wilson_interval
from realitycheck.report._data import ReportData, verdicts
from realitycheck.report._document import Inline, Table
from realitycheck.report._html import CardTable, escape_html, page, table_html
from realitycheck.report._numbers import fmt_count, fmt_rank_range, fmt_rate_ci
from realitycheck.studies.leaderboard import rank_ranges

__all__ = ["leaderboard_frame", "render_leaderboard"]


def _confidence(data: ReportData) -> float:
    config = data.manifest.get("config") or {}
    evaluate = config.get("evaluate") if isinstance(config, dict) else None
    boot = evaluate.get("bootstrap") if isinstance(evaluate, dict) else None
    level = boot.get("confidence") if isinstance(boot, dict) else None
    return float(level) if isinstance(level, int | float) and 0 < level < 1 else 0.95


def leaderboard_frame(data: ReportData, reference: str) -> pd.DataFrame:
    """Return one row per dataset, subset (``all`` or a task) and generator.

    Columns: ``dataset, subset, generator, n, n_hallucinated, rate, ci_low,
    ci_high, rank, tied, rank_low, rank_high``; ``rank`` is the competition
    rank of the rate within the dataset and subset (1 = lowest rate);
    ``rank_low`` to ``rank_high`` the ranks its Wilson interval leaves open
    (:func:`~realitycheck.studies.leaderboard.rank_ranges`).
    """
    columns = ["dataset", "subset", "generator", "n", "n_hallucinated", "rate", "ci_low"]
    columns += ["ci_high", "rank", "tied", "rank_low", "rank_high"]
    resp = data.responses.assign(y=verdicts(data, reference).to_numpy())
    resp = resp.dropna(subset=["dataset", "model", "y"])
    if resp.empty:
        return pd.DataFrame(columns=columns)
    parts = [resp.assign(subset="all")]
    for _, part in resp.groupby("dataset"):
        if part["task"].nunique() > 1:
            parts.append(part.assign(subset=part["task"].astype(str)))
    rows = (
        pd.concat(parts)
        .groupby(["dataset", "subset", "model"], sort=True)["y"]
        .agg(n="size", n_hallucinated="sum")
        .reset_index()
        .rename(columns={"model": "generator"})
    )
    rows["n_hallucinated"] = rows["n_hallucinated"].astype(int)
    rows["rate"] = rows["n_hallucinated"] / rows["n"]
    low, high = wilson_interval(rows["n_hallucinated"], rows["n"], confidence=_confidence(data))
    rows["ci_low"], rows["ci_high"] = np.asarray(low), np.asarray(high)
    grouped = rows.groupby(["dataset", "subset"])["rate"]
    rows["rank"] = grouped.rank(method="min").astype(int)
    rows["tied"] = rows.groupby(["dataset", "subset", "rank"])["rank"].transform("size") > 1
    rows["rank_low"], rows["rank_high"] = np.nan, np.nan
    for _, part in rows.groupby(["dataset", "subset"]):
        low, high = rank_ranges(part["ci_low"].to_numpy(float), part["ci_high"].to_numpy(float))
        rows.loc[part.index, "rank_low"], rows.loc[part.index, "rank_high"] = low, high
    return rows[columns].reset_index(drop=True)


def _table(frame: pd.DataFrame, dataset: str) -> Table:
    part = frame[frame["dataset"] == dataset]
    overall = part[part["subset"] == "all"].sort_values(["rank", "generator"])
    subsets = sorted(set(part["subset"]) - {"all"})
    index = {(r.subset, r.generator): r for r in part.itertuples()}
    rows: list[tuple[Inline, ...]] = []
    for r in overall.itertuples():
        cells: list[Inline] = [
            fmt_rank_range(r.rank_low, r.rank_high),
            str(r.generator),
            fmt_rate_ci(r.rate, r.ci_low, r.ci_high),
            fmt_count(r.n),
        ]
        for s in subsets:
            sub: Any = index.get((s, r.generator))
            cells.append("n/a" if sub is None else fmt_rate_ci(sub.rate, sub.ci_low, sub.ci_high))
        rows.append(tuple(cells))
    return CardTable(  # one card per generator on a phone: its rate never hides off-screen
        columns=(
            "rank range",
            "generator",
            "hallucinated [CI]",
            "n",
            *(f"{s} [CI]" for s in subsets),
        ),
        rows=tuple(rows),
        align="rlrr" + "r" * len(subsets),
        caption=f"{dataset}: share of responses the reference labels hallucinated, overall"
        + (" and per task" if subsets else "")
        + "; lowest first. Rank range: the ranks a generator could take, 1 = fewest; one is "
        "ranked above another only where their intervals do not overlap, so 1\u20134 marks "
        "generators the data cannot tell apart.",
    )


def render_leaderboard(data: ReportData, reference: str, title: str) -> str:
    """Return the HTML of the leaderboard page."""
    frame = leaderboard_frame(data, reference)
    level = f"{100 * _confidence(data):g}%"
    intro = (
        f"<p>Reference labels: <strong>{escape_html(reference)}</strong>. Each rate is the share "
        f"of a generator's responses with a {escape_html(reference)} verdict that it says are "
        f"hallucinated, with a {level} Wilson interval. Click a column header to sort. The "
        'full report (<a href="report.html">report.html</a>) holds the leaderboard study, '
        "which also ranks the generators under every other judge.</p>"
    )
    body = [f"<h1>{escape_html(title)}: leaderboard</h1>", intro]
    if frame.empty:
        body.append(f"<p>No response of this run has a {escape_html(reference)} verdict.</p>")
    for ds in sorted(set(frame["dataset"])):
        body.append(f"<h2>{escape_html(ds)}</h2>")
        body.append(table_html(_table(frame, ds)))
    return page(f"{title}: leaderboard", "\n".join(body))
