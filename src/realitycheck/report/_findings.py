"""The key findings at the top of the report: what a reader should see first.

Per dataset, the best detector against the length baseline (AUROC with CI,
against the reference labels, and their difference with a paired interval:
:mod:`._baseline`); each labeler's agreement with the reference;
each detector (or labeler's score) ranked the wrong way round, its whole AUROC
interval against the reference below 0.5; how many records of each component
that asks a model had replies it could not read, with a flag where more than
half had; which detectors scored a proxy model's reading of answers it did
not generate (named ``key (proxy: MODEL)`` everywhere the report shows
them); the leaderboard study's headline inversion; and one sentence per
study that measured something, with a link to its section (those that had
nothing to measure are named together, as no finding). Every number is read
from the run's tables, never recomputed here (a base rate is the row's
``n_positive / n``), but for the key table's paired difference
(:mod:`._baseline`), computed from the stored scores and labels.
"""

from __future__ import annotations

import re

import pandas as pd

from realitycheck.report._baseline import BASELINE, baseline_table
from realitycheck.report._cells import base_rate, wrong_way
from realitycheck.report._data import ReportData, coverage, proxy_models, shown_key
from realitycheck.report._document import Block, Bullets, Heading, Inline, Link, Paragraph, Table
from realitycheck.report._html import CardTable, anchor_of
from realitycheck.report._numbers import fmt_ci, fmt_count, fmt_rate, fmt_value, is_missing
from realitycheck.report._studies import has_rows, study_anchor, title_of
from realitycheck.store import StudyResult

__all__ = ["BASELINE", "findings_section", "first_sentence"]

LEADERBOARD_PAGE = "leaderboard.html"
SLICES_NAMED = 4
"""Slices named in one wrong-way-round finding; the others are counted."""


def _labeler_table(data: ReportData, reference: str) -> Table | None:
    a = data.agreement
    if a.empty:
        return None
    a = a[(a["slice"] == "all") & (a["reference"] == reference)]
    rows: list[tuple[Inline, ...]] = []
    for (ds, lab), part in sorted(a.groupby(["dataset", "labeler"]), key=lambda x: x[0]):
        by = {str(m): r for m, r in zip(part["metric"], part.itertuples(), strict=True)}
        kappa, acc = by.get("cohen_kappa"), by.get("accuracy")
        if kappa is None and acc is None:
            continue
        base = kappa or acc
        rows.append(
            (
                str(ds),
                str(lab),
                "n/a" if acc is None else fmt_rate(acc.value),
                "n/a" if kappa is None else fmt_ci(kappa.value, kappa.ci_low, kappa.ci_high),
                fmt_count(base.n),  # type: ignore[union-attr]
            )
        )
    if not rows:
        return None
    return CardTable(
        columns=("dataset", "labeler", "agreement", "Cohen's kappa [CI]", "n"),
        rows=tuple(rows),
        align="llrrr",
        caption=f"Each automatic labeler against {reference} labels, all responses: share of "
        "matching verdicts and Cohen's kappa (0 = chance agreement, 1 = perfect).",
    )


# The columns of the one measured and of its ground truth: in the metrics and agreement tables.
_SIDES = {"detector": ("detector", "labeler"), "labeler": ("labeler", "reference")}


def _flagged(table: pd.DataFrame, reference: str, truth: str) -> pd.DataFrame:
    """The AUROC rows against ``reference`` (in column ``truth``) whose interval lies below 0.5."""
    if table.empty:
        return table
    rows = table[(table[truth] == reference) & (table["metric"] == "auroc")]
    ends = zip(rows["value"], rows["ci_low"], rows["ci_high"], strict=True)
    return rows[[wrong_way("auroc", v, lo, hi) for v, lo, hi in ends]]


def _wrong_way_items(data: ReportData, reference: str) -> list[Inline]:
    """One line per detector (or labeler's score) and dataset ranked the wrong way round.

    Its AUROC against ``reference`` has its whole confidence interval below 0.5
    on all responses or on a slice (an AUROC without an interval is not
    judged); the slices of one detector share its line, the first
    :data:`SLICES_NAMED` named with their AUROC, PR-AUC and base rate.
    """
    out: list[Inline] = []
    for kind, table in (("detector", data.metrics), ("labeler", data.agreement)):
        measured, truth = _SIDES[kind]
        flagged = _flagged(table, reference, truth)
        if flagged.empty:
            continue
        pr = table[(table[truth] == reference) & (table["metric"] == "pr_auc")]
        pr_of = {
            (str(ds), str(sl), str(key)): row
            for ds, sl, key, row in zip(
                pr["dataset"], pr["slice"], pr[measured], pr.itertuples(index=False), strict=True
            )
        }
        for (ds, det), part in flagged.groupby(["dataset", measured], sort=True):
            part = part.assign(_later=part["slice"] != "all").sort_values(["_later", "slice"])
            shown = []
            for r in part.head(SLICES_NAMED).itertuples(index=False):
                where = "all responses" if r.slice == "all" else f"slice {r.slice}"
                auroc = fmt_ci(r.value, r.ci_low, r.ci_high)
                text = f"{where}: AUROC {auroc} (n = {fmt_count(r.n)}"
                p = pr_of.get((str(ds), str(r.slice), str(det)))
                if p is not None and not is_missing(p.value):
                    rate = fmt_value(base_rate(p.n, p.n_positive))
                    text += f"; PR-AUC {fmt_value(p.value)}, base rate {rate}"
                shown.append(text + ")")
            more = len(part) - len(shown)
            what = "Detector" if kind == "detector" else "The score of labeler"
            out.append(
                "Ranked the wrong way round: higher means less likely hallucinated? "
                f"{what} {shown_key(data, str(det))} on {ds}, against {reference} labels, "
                + "; ".join(shown)
                + (f"; and {more} more slice{'s' * (more > 1)}" if more else "")
                + f". {'Each' if len(shown) > 1 else 'The'} confidence interval lies wholly "
                "below 0.5 (chance): check the sign of the score (a similarity, a confidence "
                "or a faithfulness probability must be negated) or the labels' positive class "
                "before reading its other numbers."
            )
    return out


def first_sentence(text: str) -> str:
    """Return the first sentence of a finding (the whole text when it has one)."""
    text = " ".join(text.split())
    match = re.search(r"(?<=[.!?])\s+(?=[A-Z0-9(])", text)
    return text[: match.start()] if match else text


def _inversion(results: list[StudyResult], reference: str) -> list[Inline]:
    out: list[Inline] = []
    for result in results:
        if result.spec.get("name") != "leaderboard":
            continue
        try:
            inv = result.table("inversions")
        except KeyError:
            continue
        needed = {"dataset", "slice", "judge", "n_pairs", "n_discordant", "kendall_tau_b"}
        if inv.empty or not needed <= set(inv.columns):
            continue
        inv = inv[(inv["slice"] == "all") & inv["kendall_tau_b"].notna()]
        for ds, part in inv.groupby("dataset", sort=True):
            worst = part.sort_values(["kendall_tau_b", "judge"]).iloc[0]
            among = "the only judge" if len(part) == 1 else f"the lowest of {len(part)} judges"
            out.append(
                (
                    f"Leaderboard on {ds}: judged by {worst['judge']}, "
                    f"{fmt_count(worst['n_discordant'])} of {fmt_count(worst['n_pairs'])} "
                    f"generator pairs rank the other way round than under {reference} "
                    f"(Kendall tau-b {float(worst['kendall_tau_b']):.2f}, {among} measured "
                    "against it). ",
                    Link("Leaderboard page", LEADERBOARD_PAGE),
                    ", ",
                    Link("study", "#" + anchor_of(study_anchor(result.study), set())),
                    ".",
                )
            )
    return out


def _unreadable_items(data: ReportData, cov: pd.DataFrame) -> list[Inline]:
    """One line per component that asks a model (or had unreadable replies), per dataset.

    Components whose records were mostly unreadable (more than half) come first, flagged.
    """
    if cov.empty:
        return []
    asked = cov["llm_backed"] & (cov["failed"] < cov["records"])  # some call was answered
    rows = cov[asked | (cov["unreadable"] > 0)]
    flagged: list[Inline] = []
    plain: list[Inline] = []
    for _, r in rows.iterrows():
        n, unreadable = int(r["records"]), int(r["unreadable"])
        where = f"{r['kind']} {shown_key(data, str(r['key']))} on {r['dataset']}"
        counted = f"{fmt_count(unreadable)} of {fmt_count(n)} records had replies it could not read"
        if n and unreadable * 2 > n:
            flagged.append(
                f"Mostly unreadable: {where}: {counted}. What it reports rests on the few "
                "replies it could read (or on the value an option gives an unreadable one): "
                "check the model, the prompt and max_tokens before trusting it."
            )
        else:
            plain.append(f"{where}: {counted}.")
    return flagged + plain


def _proxy_items(data: ReportData) -> list[Inline]:
    """One line per proxy model: the detectors scored on its reading of answers it did not write.

    Only detectors with scores in the run are named (the manifest can keep a
    spec whose scores are gone).
    """
    scored = set(data.scores["detector"].dropna().astype(str))
    scored |= set(data.metrics["detector"].dropna().astype(str))
    by_model: dict[str, list[str]] = {}
    for key, model in proxy_models(data).items():
        if key in scored:
            by_model.setdefault(model, []).append(key)
    return [
        f"{', '.join(keys)} {'were' if len(keys) > 1 else 'was'} computed on a proxy model's "
        f"reading of answers it did not generate ({model}): "
        f"{'they measure' if len(keys) > 1 else 'it measures'} how that model sees the "
        "answers, not the generator's own uncertainty."
        for model, keys in sorted(by_model.items())
    ]


def _cut(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _failed_items(data: ReportData, cov: pd.DataFrame) -> list[Inline]:
    """One line per component and dataset whose calls failed, with their commonest error."""
    if cov.empty:
        return []
    out: list[Inline] = []
    for _, r in cov[cov["failed"] > 0].iterrows():
        out.append(
            f"{r['kind']} {shown_key(data, str(r['key']))} on {r['dataset']}: "
            f"{fmt_count(int(r['failed']))} of "
            f"{fmt_count(int(r['records']))} records have no value because a call failed "
            f"(commonest error: {_cut(str(r['most_common_failure']))}). Fix the cause and "
            "rerun the stage."
        )
    return out


def findings_section(
    data: ReportData,
    reference: str,
    results: list[StudyResult],
    cov: pd.DataFrame | None = None,
) -> list[Block]:
    """Build the key-findings panel (see the module docstring).

    ``cov`` is the run's :func:`~realitycheck.report._data.coverage` (computed here if not given).
    """
    out: list[Block] = [Heading("Key findings", 2, anchor="key-findings")]
    tables = [t for t in (baseline_table(data, reference), _labeler_table(data, reference)) if t]
    if not tables:
        out.append(
            Paragraph(
                f"No detector or labeler has been measured against {reference} labels yet "
                "(run the evaluate stage)."
            )
        )
    out += tables
    proxied = _proxy_items(data)
    if proxied:
        out.append(Heading("Read through a proxy model", 3, anchor="key-proxy"))
        out.append(Bullets(tuple(proxied)))
    wrong = _wrong_way_items(data, reference)
    if wrong:
        out.append(Heading("Ranked the wrong way round", 3, anchor="key-wrong-way"))
        out.append(Bullets(tuple(wrong)))
    cov = coverage(data) if cov is None else cov
    failed = _failed_items(data, cov)
    if failed:
        out.append(Heading("Calls that failed", 3, anchor="key-failed"))
        out.append(Bullets(tuple(failed)))
    unreadable = _unreadable_items(data, cov)
    if unreadable:
        out.append(Heading("Replies that could not be read", 3, anchor="key-unreadable"))
        out.append(Bullets(tuple(unreadable)))
    items = _inversion(results, reference)
    idle: list[str | Link] = []
    for result in results:
        link = Link(title_of(result, results), "#" + anchor_of(study_anchor(result.study), set()))
        if not has_rows(result):  # nothing measured: its section says why, it is no finding
            idle += [", " if idle else "", link]
            continue
        finding = first_sentence(result.finding) or "No finding stated."
        items.append((link, ": ", finding))
    if idle:
        many = len(idle) > 2
        items.append(
            (
                f"{'These studies' if many else 'This study'} had nothing to measure on this "
                "run (no table row, no figure; the section says why): ",
                *idle,
                ".",
            )
        )
    if items:
        out.append(Heading("What the studies found", 3, anchor="key-studies"))
        out.append(Bullets(tuple(items)))
    return out
