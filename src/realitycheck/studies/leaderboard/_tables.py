"""Tables, captions and the finding of the leaderboard study."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from realitycheck.metrics import discordant_pairs, kendall_tau_b, wilson_interval
from realitycheck.studies.leaderboard._ranking import describe_ties
from realitycheck.text import short_names

__all__ = [
    "ANSWER_CAPTION",
    "BOARD_CAPTION",
    "BOARD_COLUMNS",
    "INVERSION_CAPTION",
    "SELF_CAPTION",
    "SLICE_CAPTION",
    "answer_rates",
    "finding",
    "front",
    "inversions",
    "name_reference",
    "slice_column",
    "slice_finding",
    "slice_rates",
    "slices",
    "with_slice_columns",
]

BOARD_COLUMNS = [
    "judge",
    "judge_kind",
    "generator",
    "n_judged",
    "n_hallucinated",
    "hallucination_rate",
    "ci_low",
    "ci_high",
    "n_judged_answered",
    "n_hallucinated_answered",
    "hallucination_rate_answered",
    "ranked_rate",
    "rank",
    "tied",
    "rank_low",
    "rank_high",
    "human_rate",
    "human_rank",
    "threshold",
    "threshold_rule",
]
BOARD_CAPTION = (
    "Generators under each judge, on responses that both the judge and the reference labelled. "
    "hallucination_rate: share judged hallucinated (Wilson CI); *_answered: among non-refusals. "
    "ranked_rate is the rate ranked (over {by} responses); rank 1 = lowest, ties share the "
    "average rank (tied = True). rank_low to rank_high: the ranks it could take, a generator "
    "ranked above another only where their Wilson intervals of the ranked rate do not "
    "overlap (those that overlap form a tie group); {ref}_rate / {ref}_rank: the reference "
    "({ref}) on the same responses."
)
ANSWER_CAPTION = (
    "Answer rate: share of responses with more than {} words (shorter ones count as "
    "refusals, the HHEM leaderboard rule), with Wilson CI."
)
INVERSION_CAPTION = (
    "Each judge's ranking of generators against the reference's: discordant pairs (each "
    "listed as a < b: the reference rates a lower, the judge rates b lower; pairs tied "
    "under either are counted in n_tied_pairs, not as discordant) and Kendall's tau-b."
)
SELF_CAPTION = (
    "Judges that are also generators (a judge stands for the model of its nested backend, "
    "a recorded judge for its name; names matched after lower-casing, dropping org / family "
    "prefixes and treating - _ . alike). bias = judge rate - {ref} rate; self_preference = "
    "bias_self - bias_others (negative = more lenient with itself), CI from resampling sources."
)

SLICE_CAPTION = (
    "Each generator's rate in every slice side by side: rate:<slice> is the rate ranked "
    "(over {by} responses that the judge and {ref} both labelled), rank:<slice> its rank in "
    "that slice (1 = lowest); all pools every slice, as a leaderboard's overall rate does, "
    "and n_judged counts its responses."
)


_REFERENCE_COLUMNS = (
    "human_rate",
    "human_rank",
    "human_ties",
    "human_rate_self",
    "human_rank_self",
)


def name_reference(frame: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Name the reference's columns after its key: ``human_rate`` -> ``<reference>_rate``.

    The tables are built with ``human_*`` column names; with the default
    reference (``human``) nothing changes.
    """
    names = {c: f"{reference}_{c.removeprefix('human_')}" for c in _REFERENCE_COLUMNS}
    return frame.rename(columns={c: n for c, n in names.items() if c in frame.columns})


def slice_column(column: str) -> str:
    """The frame column holding the values of the declared slice column ``column``."""
    return f"slice:{column}"


def _declared(meta: Any) -> dict[str, Any]:
    """A response's declared slice columns (``meta["slice"]``); ``{}`` when it has none."""
    parsed = json.loads(meta) if isinstance(meta, str) and meta else meta
    found = parsed.get("slice") if isinstance(parsed, dict) else None
    return found if isinstance(found, dict) else {}


def with_slice_columns(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Add ``slice:<column>`` per column: each response's value, None where it declares none.

    A built-in response column (``model``, ``prompt_variant``, ``dataset``,
    ``task``: :data:`realitycheck.pipeline.BUILT_IN_SLICES`) is read from the
    response itself; any other from what the response declares (``meta["slice"]``).
    """
    if not columns:
        return frame
    from realitycheck.pipeline import BUILT_IN_SLICES

    declared = [_declared(m) for m in frame["meta"]]
    values = {
        slice_column(c): (
            frame[c].astype(object)
            if c in BUILT_IN_SLICES
            else pd.Series([d.get(c) for d in declared], index=frame.index, dtype=object)
        )
        for c in columns
    }
    return frame.assign(**values)


def slices(frame: pd.DataFrame, columns: Sequence[str] = ()) -> list[tuple[str, np.ndarray]]:
    """The slices ranked: ``all``, ``task=<t>`` per task, ``<column>=<value>`` per slice value.

    A task or slice column with fewer than two values adds no slice (its one
    slice would be ``all`` again), as in ``evaluate --slice-by``.
    """
    out = [("all", np.ones(len(frame), dtype=bool))]
    for name, column in [("task", "task"), *((c, slice_column(c)) for c in columns)]:
        values = sorted(str(v) for v in frame[column].dropna().unique())
        if len(values) > 1:
            text = frame[column].map(lambda v: None if v is None else str(v))
            out += [(f"{name}={v}", (text == v).to_numpy()) for v in values]
    return out


def slice_rates(board: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Each judge's rate and rank per generator, one column pair per slice (``all`` first).

    Empty unless ``columns`` (the study's ``slice_by``) names a column.
    """
    if board.empty or not columns:
        return pd.DataFrame()
    order = list(dict.fromkeys(board["slice"]))
    order = ["all", *(s for s in order if s != "all")]
    keys = ["dataset", "judge", "judge_kind", "generator"]
    wide = board.set_index([*keys, "slice"])[["ranked_rate", "rank"]].unstack("slice")
    out = board.loc[board["slice"] == "all", [*keys, "n_judged"]].set_index(keys)
    for name in order:
        out[f"rate:{name}"] = wide[("ranked_rate", name)]
        out[f"rank:{name}"] = wide[("rank", name)]
    judges = {j: i for i, j in enumerate(dict.fromkeys(board["judge"]))}
    out = out.reset_index()
    out = out.assign(_judge=out["judge"].map(judges))
    out = out.sort_values(["dataset", "_judge", "rank:all", "generator"], kind="stable")
    return out.drop(columns="_judge").reset_index(drop=True)


def slice_finding(rates: pd.DataFrame, reference: str) -> str:
    """One sentence per dataset: the reference's lowest-rate generator per slice and pooled."""
    sentences = []
    short = short_names(rates["generator"])
    for ds, part in rates[rates["judge_kind"] == "reference"].groupby("dataset", sort=True):
        slices_ = [
            c.removeprefix("rate:")
            for c in part.columns
            if c.startswith("rate:") and part[c].notna().any()
        ]
        if len(slices_) < 2:
            continue
        best = []
        for name in slices_:
            rated = part[part[f"rate:{name}"].notna()]
            if rated.empty:
                continue
            top = rated.sort_values(f"rate:{name}").iloc[0]
            best.append(f"{name} {short[str(top['generator'])]} ({top[f'rate:{name}']:.0%})")
        pooled = part["rank:all"]
        moved = sum(
            bool((part[f"rank:{n}"].ne(pooled) & part[f"rank:{n}"].notna() & pooled.notna()).any())
            for n in slices_
            if n != "all"
        )
        sentences.append(
            f"On {ds}, the generator {reference} rates lowest per slice: {'; '.join(best)}; "
            f"the ranking differs from the pooled one in {moved} of {len(slices_) - 1} slices."
        )
    return " ".join(sentences)


def front(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate per-slice frames with ``dataset`` and ``slice`` as the first columns."""
    if not parts:
        return pd.DataFrame()
    frame = pd.concat(parts, ignore_index=True)
    lead = ["dataset", "slice"]
    return frame[lead + [c for c in frame.columns if c not in lead]]


def answer_rates(sub: pd.DataFrame, refused: np.ndarray, confidence: float) -> pd.DataFrame:
    """Per generator: responses, refusals and the answer rate with its Wilson interval."""
    grouped = pd.DataFrame({"generator": sub["model"].to_numpy(), "refused": refused})
    out = (
        grouped.groupby("generator")["refused"]
        .agg(n_responses="size", n_refusals="sum")
        .reset_index()
    )
    answered = out["n_responses"] - out["n_refusals"]
    out["answer_rate"] = answered / out["n_responses"]
    out["ci_low"], out["ci_high"] = wilson_interval(
        answered, out["n_responses"], confidence=confidence
    )
    return out


def inversions(board: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per judge: its ranking against the reference's on the same responses."""
    out = []
    short = short_names(board["generator"])
    for judge, part in board[board["judge_kind"] != "reference"].groupby("judge", sort=False):
        part = part[part["ranked_rate"].notna() & part["human_rate"].notna()]
        names = [short[str(g)] for g in part["generator"]]
        human, rate = part["human_rate"].to_numpy(), part["ranked_rate"].to_numpy()
        pairs, n_tied = discordant_pairs(human, rate)
        tau, p = kendall_tau_b(human, rate)
        n = len(names)
        out.append(
            {
                "judge": judge,
                "judge_kind": part["judge_kind"].iloc[0] if n else "",
                "threshold_rule": part["threshold_rule"].iloc[0] if n else "",
                "n_generators": n,
                "n_pairs": n * (n - 1) // 2,
                "n_discordant": len(pairs),
                "n_tied_pairs": n_tied,
                "kendall_tau_b": tau,
                "p_value": p,
                "judge_ties": describe_ties(names, rate),
                "human_ties": describe_ties(names, human),
                "discordant_pairs": "; ".join(f"{names[i]} < {names[j]}" for i, j in pairs),
            }
        )
    return out


NAMED = 3
"""Generators named in one tie group of the finding; the others are counted."""


def _listed(names: list[str]) -> str:
    if len(names) == 1:
        return f"only {names[0]}"
    more = len(names) - NAMED
    shown = ", ".join(names[:NAMED]) + (f" and {more} more" if more > 0 else "")
    return f"{len(names)} generators ({shown})"


def _tie_groups(part: pd.DataFrame, short: dict[str, str]) -> str:
    """``"; by their Wilson intervals, ... could rank first and ... last"`` (rank ranges).

    Empty when the board has no rank ranges; "tell every rank apart" when no
    two intervals overlap, "do not order" when every one overlaps every other.
    """
    if not {"rank_low", "rank_high"} <= set(part.columns):
        return ""
    ranged = part[part["rank_low"].notna() & part["rank_high"].notna()]
    if len(ranged) < 2:
        return ""
    if (ranged["rank_low"] == ranged["rank_high"]).all():
        return "; their Wilson intervals tell every rank apart"
    n = len(ranged)
    if ((ranged["rank_low"] == 1) & (ranged["rank_high"] == n)).all():
        return f"; their Wilson intervals all overlap: the data do not order these {n} generators"
    first = [short[str(g)] for g in ranged.loc[ranged["rank_low"] == 1, "generator"]]
    last = [short[str(g)] for g in ranged.loc[ranged["rank_high"] == n, "generator"]][::-1]
    return (
        f"; their Wilson intervals overlap, so {_listed(first)} could rank first "
        f"and {_listed(last)} last"
    )


def finding(board: pd.DataFrame, inv: pd.DataFrame, pref: pd.DataFrame, reference: str) -> str:
    """A few sentences computed from the tables (the ``all`` slice of each dataset)."""
    if board.empty:
        return (
            "No dataset in this run has two or more generators with reference labels, "
            "so nothing was ranked."
        )
    sentences = []
    for ds, part in board[(board["slice"] == "all") & (board["judge_kind"] == "reference")].groupby(
        "dataset"
    ):
        part = part.sort_values(["ranked_rate", "generator"])
        best, worst = part.iloc[0], part.iloc[-1]
        short = short_names(part["generator"])
        sentences.append(
            f"On {ds}, {reference} labels rank {short[str(best['generator'])]} lowest "
            f"({best['ranked_rate']:.0%} hallucinated) and "
            f"{short[str(worst['generator'])]} highest ({worst['ranked_rate']:.0%}) "
            f"of {len(part)} generators{_tie_groups(part, short)}."
        )
        rows = inv[(inv["dataset"] == ds) & (inv["slice"] == "all")] if not inv.empty else inv
        for _, r in rows[rows["judge_kind"] == "human"].iterrows() if not rows.empty else ():
            sentences.append(
                f"Under the human labels {r['judge']}, {r['n_discordant']} of "
                f"{r['n_pairs']} pairs of that ranking are inverted (tau-b "
                f"{r['kendall_tau_b']:.2f})."
            )
        rows = rows[rows["judge_kind"] != "human"] if not rows.empty else rows
        flat = rows[rows["kendall_tau_b"].isna()] if not rows.empty else rows
        if not flat.empty:
            sentences.append(
                f"{', '.join(flat['judge'])} "
                f"{'rates' if len(flat) == 1 else 'rate'} every generator the same "
                "(tau-b undefined)."
            )
        rows = rows[rows["kendall_tau_b"].notna()] if not rows.empty else rows
        if not rows.empty:
            rows = rows.sort_values("kendall_tau_b", ascending=False)
            top, low = rows.iloc[0], rows.iloc[-1]
            text = (
                f"Of {'the other ' if len(flat) else ''}{len(rows)} automatic judges, "
                f"{top['judge']} matches that ranking best "
                f"(Kendall tau-b {top['kendall_tau_b']:.2f}, {top['n_discordant']} of "
                f"{top['n_pairs']} pairs inverted) and {low['judge']} worst (tau-b "
                f"{low['kendall_tau_b']:.2f}, {low['n_discordant']} inverted)"
            )
            if len(rows) == 1:
                text = (
                    f"The only automatic judge, {top['judge']}, inverts {top['n_discordant']} of "
                    f"{top['n_pairs']} pairs of that ranking (Kendall tau-b "
                    f"{top['kendall_tau_b']:.2f})"
                )
            sentences.append(text + ".")
    if not pref.empty:
        rows = pref[pref["slice"] == "all"]
        items = [
            f"{r['judge']} {100 * r['self_preference']:+.1f} points "
            f"(CI {100 * r['ci_low']:+.1f} to {100 * r['ci_high']:+.1f}) on {r['dataset']}"
            for _, r in rows.iterrows()
        ]
        if items:
            sentences.append(
                "Self-preference of judges that are also generators (bias on own outputs minus "
                f"mean bias on others, bias = judge minus {reference} rate; negative = "
                "lenient with itself): " + "; ".join(items) + "."
            )
    return " ".join(sentences)
