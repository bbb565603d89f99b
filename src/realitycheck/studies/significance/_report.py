"""Captions, the group figure and the finding of the significance study."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from realitycheck.store import StudyFigure
from realitycheck.studies.plots import (
    NAME_WIDTH,
    PAGE_WIDTH,
    TEXT_SIZE,
    fit_names,
    new_figure,
    png_bytes,
    set_title,
    text_width,
    wrap,
)
from realitycheck.studies.significance._groups import NOT_APPLICABLE
from realitycheck.text import short_names

__all__ = ["CAPTIONS", "describe_value", "finding", "fmt_p", "group_figure"]


def fmt_p(p: float) -> str:
    """A p-value for a sentence: ``p = 0.012``, ``p < 0.001`` or ``p n/a``."""
    return "p n/a" if np.isnan(p) else ("p < 0.001" if p < 0.001 else f"p = {p:.3f}")


def group_figure(
    ds: str, groups: pd.DataFrame, test: pd.Series, *, value: str, group: str, confidence: float
) -> StudyFigure:
    """Each group's mean with its interval, and the test in the caption."""
    g = groups.sort_values("mean")
    low = g["mean"] - g["ci_low"].fillna(g["mean"])
    high = g["ci_high"].fillna(g["mean"]) - g["mean"]
    fig, ax = new_figure(PAGE_WIDTH, 0.3 * len(g) + 1.2)
    ax.errorbar(g["mean"], range(len(g)), xerr=[low, high], fmt="o", capsize=3)
    counts = [f" (n={k})" for k in g["n"]]  # beside the name, which has NAME_WIDTH to itself
    short = short_names(g["group"])  # groups are often models: the one short-name rule
    shown = fit_names([short[str(n)] for n in g["group"]])
    ax.set_yticks(range(len(g)), [n + c for n, c in zip(shown, counts, strict=True)])
    what = describe_value(value)
    widest = max((text_width(c, TEXT_SIZE) / 72 for c in counts), default=0.0)
    axis = PAGE_WIDTH - NAME_WIDTH - widest - 0.5
    ax.set_xlabel(wrap(what[0].upper() + what[1:], axis * 72, TEXT_SIZE), fontsize=TEXT_SIZE)
    set_title(fig, f"{ds}: by {group} ({confidence:.0%} CI)")
    ax.grid(axis="x", alpha=0.3)
    caption = (
        f"{ds}: {what} per {group} group, with {confidence:.0%} CIs (Wilson for 0/1 "
        "values, t "
        f"otherwise); {test['test']}, {fmt_p(test['p_value'])}."
    )
    stem = f"groups_{re.sub(r'[^A-Za-z0-9._=-]+', '_', ds)}"
    return StudyFigure(stem, png_bytes(fig), caption)


def finding(
    frames: dict[str, pd.DataFrame], *, value: str, group: str, alpha: float, confidence: float
) -> str:
    """Up to five sentences: the group tests and the detector comparisons."""
    sentences = []
    tests, groups = frames["tests"], frames["groups"]
    ran = tests[tests["test"] != NOT_APPLICABLE] if len(tests) else tests
    for _, t in ran.head(3).iterrows():
        g = groups[groups["dataset"] == t["dataset"]].dropna(subset=["mean"]).sort_values("mean")
        low, high = g.iloc[0], g.iloc[-1]
        verdict = "differs" if t["significant"] else "does not differ significantly"
        left = f", {t['n_no_group']} responses without a group left out" if t["n_no_group"] else ""
        blocks = (
            f" on the {t['n_blocks']} examples with a value for every group"
            if t["n_blocks"]
            else ""
        )
        test = f"{t['test']}{blocks}, {fmt_p(t['p_value'])}{left}"
        sentences.append(
            f"On {t['dataset']}, {describe_value(value)} {verdict} across "
            f"{t['n_groups']} {group} groups ({test}): "
            f"from {low['mean']:.2f} ({low['group']}) to {high['mean']:.2f} ({high['group']})."
        )
    if len(ran) > 3:
        sentences.append(f"{len(ran) - 3} more datasets are in the tests table.")
    if len(tests) and len(ran) < len(tests):
        na = tests[tests["test"] == NOT_APPLICABLE]
        sentences.append(
            f"No group test on {', '.join(na['dataset'])} (one group or no variation)."
        )
    det = frames["detectors"]
    if len(det):
        ds = det.groupby("dataset").size().idxmax()
        d = det[det["dataset"] == ds].sort_values("auroc_b", ascending=False)
        first = d.iloc[0]
        n_sig = int((d["delong_p_bonferroni"] < alpha).sum())
        sentences.append(
            f"On {ds}, {first['detector_a']} (AUROC {first['auroc_a']:.3f}) vs "
            f"{first['detector_b']} ({first['auroc_b']:.3f}): difference "
            f"{first['difference']:+.3f}, "
            f"DeLong {fmt_p(first['delong_p'])}, paired-bootstrap {confidence:.0%} CI "
            f"[{first['bootstrap_ci_low']:+.3f}, {first['bootstrap_ci_high']:+.3f}]; "
            f"{n_sig} of {len(d)} comparisons are significant after Bonferroni."
        )
    return " ".join(sentences) or "No dataset had the value, the groups or the detectors to test."


def describe_value(value: str) -> str:
    """What a value is, in words (``the hallucination rate under human labels``)."""
    if value.startswith("hallucinated:"):
        return f"the hallucination rate under {value.split(':', 1)[1]} labels"
    return f"the mean of {value}"


CAPTIONS = {
    "tests": "One test per dataset: {s.tested} across {s.group} groups; 'why' says which test "
    "was chosen and why (design, Shapiro-Wilk at alpha={s.alpha}, 0/1 values); p two-sided; "
    "group_rule says how derived groups were formed; n_no_group responses had no group.",
    "groups": "Per group: n, mean (a rate for 0/1 values) with a {b.confidence:.0%} CI "
    "(Wilson for 0/1 values, t otherwise), median and standard deviation, on every "
    "non-missing value.",
    "normality": "Shapiro-Wilk checks behind the choice (per group, or of the differences "
    "for two matched groups); normal = p >= alpha; n < 3 or constant values cannot be checked.",
    "posthoc": "Pairwise post-hoc comparisons; p_adjusted is Bonferroni-corrected or "
    "family-wise (Tukey HSD, Nemenyi); significant = p_adjusted < alpha.",
    "detectors": "AUROC of detector a vs b on the items both scored, against {s.reference}: "
    "DeLong's test (fast algorithm, Sun & Xu 2014) and a paired bootstrap of the difference "
    "a - b ({b.n_resamples} resamples; p = twice the smaller share of resamples on either "
    "side of 0, resolution 2/n_resamples); delong_p_bonferroni over the pairs of the dataset.",
}
