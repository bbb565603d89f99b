"""Model factors: hallucination rate against size within a family, and base vs tuned pairs.

Ganesh et al. (*Rethinking Hallucinations: Correctness, Consistency, and
Prompt Multiplicity*) compare models of one family across sizes (Pythia
2.8B/6.9B/12B, OPT 6.7B/13B/30B) and each base model with its chat or
instruct version (Llama2-7B vs 7B-Chat, Llama3-8B vs 8B-Instruct). This
study does the same for the hallucination rate of any run, with the models'
family, size and tuning taken from the run's metadata (a models file given
with ``--models`` or a run config's ``[models]`` table), never guessed from
names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap
from realitycheck.metrics import wilson_interval
from realitycheck.store import RunData, StudyFigure, StudyResult, StudyTable
from realitycheck.studies import (
    UNKNOWN,
    Study,
    fmt,
    model_factor_table,
    quiet,
    study,
    tuning_pairs,
)
from realitycheck.studies.plots import (
    PAGE_WIDTH,
    PALETTE,
    TEXT_SIZE,
    legend_below,
    new_figure,
    png_bytes,
    set_title,
)

__all__ = ["ModelFactors"]

CAPTIONS = {
    "models": "Each model's metadata ('unknown' where the run has none) and its hallucination "
    "rate under {s.reference} on the responses it labels, with {b.confidence:.0%} Wilson "
    "intervals.",
    "size_trend": "Per family with two or more sizes: the rate of each size on the examples "
    "every model of the family answered (n_common), Spearman's rho between size and rate "
    "(two-sided p; with few models it means little) and the least-squares slope of the rate "
    "per tenfold size.",
    "tuning_pairs": "Each base model against an instruction-tuned model of the same family and "
    "size, on the examples both answered (several responses to one example averaged): rates, "
    "difference (tuned - base), the examples where each is worse, and the two-sided sign "
    "test on them (McNemar's exact test with one response per example).",
}


@study("model_factors")
@dataclass(frozen=True, kw_only=True)
class ModelFactors(Study):
    """Hallucination rate by model factors: size within a family, base vs instruction-tuned.

    The rate is the share of a model's responses that ``reference`` labels
    hallucinated (1 - accuracy). Family, size (parameters) and tuning come from
    the run's model metadata; models without it are listed as unknown and
    take part in no comparison. Within a family, sizes are compared on the
    examples every model of the family answered; a base model and a tuned
    model of the same family and size are compared on the examples both
    answered, by a sign test over the examples where they differ.

    Args:
        reference: The labels whose verdicts give the rates.
    """

    title: ClassVar[str] = "Model factors: size within a family, base vs instruction-tuned"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Tabulate every dataset's models, size trends and base/tuned pairs."""
        parts: dict[str, list[pd.DataFrame]] = {k: [] for k in CAPTIONS}
        figures, skipped = [], []
        for ds in data.datasets:
            if self.reference not in data.labelers_of(ds):
                skipped.append(f"{ds}: no {self.reference!r} labels")
                continue
            frame = data.frame(ds).assign(h=data.verdicts(ds)[self.reference])
            frame = frame[frame["h"].notna()]
            table = model_factor_table(frame["model"], data.models)
            parts["models"].append(_rates(ds, frame, table, bootstrap.confidence))
            trend = _size_trend(ds, frame, table)
            parts["size_trend"].append(trend)
            parts["tuning_pairs"].append(_pairs(ds, frame, table))
            if len(trend):
                figures.append(_figure(ds, trend, table))
        frames = {
            k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in parts.items()
        }
        return self._result(
            _finding(frames, data),
            tables=[
                StudyTable(k, frames[k], CAPTIONS[k].format(s=self, b=bootstrap)) for k in frames
            ],
            figures=figures,
            skipped=skipped,
        )


def _rates(ds: str, frame: pd.DataFrame, table: pd.DataFrame, confidence: float) -> pd.DataFrame:
    grouped = frame.groupby("model")["h"]
    n = table["model"].map(grouped.size()).to_numpy(dtype=float)
    k = table["model"].map(grouped.sum()).to_numpy(dtype=float)
    low, high = wilson_interval(k, n, confidence=confidence)
    out = table.assign(n=n.astype(int), n_hallucinated=k.astype(int), rate=k / n)
    out.insert(0, "dataset", ds)
    return out.assign(ci_low=low, ci_high=high)


def _per_example(frame: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Each model's mean verdict per example (columns = models), examples all of them answered."""
    part = frame[frame["model"].isin(models)]
    wide = part.pivot_table(index="example_id", columns="model", values="h", aggfunc="mean")
    return wide.reindex(columns=models).dropna()


def _size_trend(ds: str, frame: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    from scipy import stats

    rows = []
    sized = table[(table["family"] != UNKNOWN) & table["size"].notna()]
    for family, part in sized.groupby("family", sort=True):
        if part["size"].nunique() < 2:
            continue
        models = part.sort_values(["size", "model"])["model"].tolist()
        common = _per_example(frame, models)
        if common.empty:
            continue
        rates = common.mean()
        sizes = part.set_index("model").loc[models, "size"].to_numpy(dtype=float)
        with quiet():
            rho, p = stats.spearmanr(sizes, rates.to_numpy())
        slope = np.polyfit(np.log10(sizes), rates.to_numpy(), 1)[0]
        for model, size in zip(models, sizes, strict=True):
            rows.append(
                {"dataset": ds, "family": family, "model": model, "size": size}
                | {"n_common": len(common), "rate": float(rates[model])}
                | {"n_models": len(models), "spearman_rho": float(rho), "spearman_p": float(p)}
                | {"slope_per_tenfold": float(slope)}
            )
    columns = ["dataset", "family", "model", "size", "n_common", "rate", "n_models"]
    return pd.DataFrame(rows, columns=[*columns, "spearman_rho", "spearman_p", "slope_per_tenfold"])


def _pairs(ds: str, frame: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    from scipy import stats

    rows: list[dict[str, Any]] = []
    for family, size, base, tuned in tuning_pairs(table):
        both = _per_example(frame, [base, tuned])
        worse = int((both[tuned] > both[base]).sum())
        better = int((both[tuned] < both[base]).sum())
        p = stats.binomtest(worse, worse + better).pvalue if worse + better else np.nan
        rows.append(
            {"dataset": ds, "family": family, "size": size, "base": base, "tuned": tuned}
            | {"n_examples": len(both), "rate_base": both[base].mean() if len(both) else np.nan}
            | {"rate_tuned": both[tuned].mean() if len(both) else np.nan}
            | {"tuned_worse": worse, "tuned_better": better, "sign_test_p": float(p)}
        )
    columns = ["dataset", "family", "size", "base", "tuned", "n_examples", "rate_base"]
    columns += ["rate_tuned", "tuned_worse", "tuned_better", "sign_test_p"]
    out = pd.DataFrame(rows, columns=columns)
    out.insert(columns.index("rate_tuned") + 1, "difference", out["rate_tuned"] - out["rate_base"])
    return out


def _figure(ds: str, trend: pd.DataFrame, table: pd.DataFrame) -> StudyFigure:
    """Rate against size, one line per family; each model is a point, its tuning the marker.

    The points are not named in the figure (names of one size would run into
    each other); the size_trend table names each model at its size and rate.
    """
    import re

    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    tuning = table.set_index("model")["instruction_tuned"]
    marks = {"base": "o", "tuned": "s"}
    fig, ax = new_figure(PAGE_WIDTH, 3.6)
    handles, labels = [], []
    for k, (family, part) in enumerate(trend.groupby("family", sort=True)):
        colour = PALETTE[k % len(PALETTE)]
        (line,) = ax.plot(part["size"], part["rate"], "-", color=colour)
        handles.append(line)
        labels.append(f"family: {family}")
        for row in part.itertuples():
            marker = marks.get(str(tuning.get(row.model)), "x")
            ax.plot([row.size], [row.rate], marker, color=colour, markersize=6)
    for name, marker in (("base", "o"), ("instruction-tuned", "s"), ("tuning unknown", "x")):
        handles.append(Line2D([], [], color="black", marker=marker, linestyle="none"))
        labels.append(name)
    ax.set_xscale("log")
    # Ticks at the sizes drawn, written plainly (png_bytes draws text without maths,
    # so the default "$10^{10}$" labels would show as written); a size within a
    # factor 1.4 of the last one ticked is left unticked, so labels never collide.
    ticks: list[float] = []
    for size in sorted(trend["size"].astype(float).unique()):
        if not ticks or size >= 1.4 * ticks[-1]:
            ticks.append(size)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1e9:.3g}B"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("Parameters (log scale)", fontsize=TEXT_SIZE)
    ax.set_ylabel("Hallucination rate", fontsize=TEXT_SIZE)
    set_title(fig, f"{ds}: rate against size within each family")
    ax.grid(alpha=0.3)
    legend_below(fig, handles, labels)
    caption = (
        f"{ds}: hallucination rate of each model against its size, one line per family, on "
        "the examples every model of the family answered (o base, s instruction-tuned, "
        "x tuning unknown); the size_trend table names the model at each point."
    )
    return StudyFigure(f"size_{re.sub(r'[^A-Za-z0-9._=-]+', '_', ds)}", png_bytes(fig), caption)


def _finding(frames: dict[str, pd.DataFrame], data: RunData) -> str:
    models = frames["models"]
    if models.empty:
        return "No dataset of this run has the reference labels, so no rate was measured."
    unknown = sorted(set(models.loc[~models["has_metadata"], "model"]))
    if len(unknown) == models["model"].nunique():
        return (
            f"None of the {len(unknown)} models has metadata (give a models file with "
            "--models, or a [models] table in the run config), so every model is unknown "
            "and no model is grouped by family, size or tuning; nothing is guessed from names."
        )
    sentences = []
    trend = frames["size_trend"]
    for (ds, family), part in trend.groupby(["dataset", "family"], sort=True):
        first, last = part.iloc[0], part.iloc[-1]
        sentences.append(
            f"On {ds}, {family} goes from a rate of {fmt(first['rate'], 2)} at "
            f"{first['size'] / 1e9:g}B to {fmt(last['rate'], 2)} at {last['size'] / 1e9:g}B "
            f"(Spearman rho {fmt(first['spearman_rho'], 2)} over {first['n_models']} sizes, "
            f"{first['n_common']} shared examples)."
        )
    for row in frames["tuning_pairs"].head(3).to_dict("records"):
        sentences.append(
            f"On {row['dataset']}, {row['tuned']} vs its base {row['base']}: rate "
            f"{fmt(float(row['rate_tuned']), 2)} vs {fmt(float(row['rate_base']), 2)} on "
            f"{row['n_examples']} examples (sign test p = {fmt(float(row['sign_test_p']))})."
        )
    if not sentences:
        sentences.append(
            "No family has two sizes and no base model has a tuned model of its family and "
            "size in the metadata, so nothing was compared."
        )
    if unknown:
        sentences.append(f"{len(unknown)} models have no metadata and are listed as unknown.")
    return " ".join(sentences[:6])
