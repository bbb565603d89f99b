"""Every study figure: no two texts overlap, none leaves the figure, none is too small.

Each figure a study draws is rendered through the function that draws it,
from a table with many rows and long, near-identical and hostile names
(markup, maths, terminal escapes, bidi overrides; model names with and
without a path), and checked as the report's own figures are
(:mod:`_figure_text`): the figure fits the page column, its text is at least
8 pt, inside the figure and apart from every other text, and drawn as written.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _figure_text import (
    DATASET,
    LONG,
    MATHS,
    OSC,
    REFERENCE,
    RLO,
    SCRIPT,
    catching,
    check,
)

DETECTORS = (LONG + "]", LONG + ",temperature=1.0]", SCRIPT, MATHS, OSC, RLO, "length")
LABELERS = (
    "qa_judge[judge=openai[model=openai/gpt-4o-2024-08-06],prompt=strict-with-reasons]",
    "qa_judge[judge=openai[model=openai/gpt-4o-2024-08-06],prompt=strict]",
    "recorded:" + SCRIPT,
    "recorded:" + MATHS,
    "recorded:" + OSC,
    "rouge_l[threshold=0.5]",
)
MODELS = (
    "<script>alert(1)</script> model",
    "org/<b>x</b>",
    "meta-llama/Llama-3.1-70B-Instruct-with-a-long-suffix-of-its-own",
    "mine/Llama-3.1-70B-Instruct-with-a-long-suffix-of-its-own",
    MATHS,
    RLO,
)
DATASETS = (DATASET, DATASET + " (second)", "halueval_qa")


@pytest.fixture
def caught(monkeypatch):
    return catching(monkeypatch)


def _rng(seed: int = 0):
    return np.random.default_rng(seed)


def significance():
    from realitycheck.studies.significance._report import group_figure

    rates = _rng().random(len(MODELS))
    groups = pd.DataFrame(
        {
            "group": list(MODELS),
            "mean": rates,
            "ci_low": rates - 0.05,
            "ci_high": rates + 0.05,
            "n": [1200] * len(MODELS),
        }
    )
    test = pd.Series({"test": "chi-squared", "p_value": 0.003})
    group_figure(
        DATASET, groups, test, value=f"hallucinated:{REFERENCE}", group="model", confidence=0.95
    )


def labeler_shift():
    from realitycheck.studies.labeler_shift._report import scatter

    rng = _rng(1)
    rows = [
        {
            "metric": "auroc",
            "labeler": lab,
            "dataset": ds,
            "detector": det,
            "reference_value": rng.uniform(0.5, 0.9),
            "value": rng.uniform(0.5, 0.9),
        }
        for lab in LABELERS
        for ds in DATASETS
        for det in DETECTORS
    ]
    scatter(pd.DataFrame(rows), REFERENCE)


def prompt_flow():
    from realitycheck.analysis import CATEGORIES
    from realitycheck.studies.prompt_multiplicity._flow import flow_figure

    rows = [
        {"without": a, "with": b, "n": 3 + i + j}
        for i, a in enumerate(CATEGORIES)
        for j, b in enumerate(CATEGORIES)
    ]
    flow_figure(DATASET, LONG + "]", pd.DataFrame(rows))


def _summary() -> pd.DataFrame:
    rng = _rng(2)
    n = len(MODELS) * 2
    share = rng.dirichlet([1, 1, 1], n)
    return pd.DataFrame(
        {
            "model": list(MODELS) * 2,
            "retriever": [""] * len(MODELS) + ["bm25[k=5,index=" + "x" * 40 + "]"] * len(MODELS),
            "paf": share[:, 0],
            "pae": share[:, 1],
            "randomness": share[:, 2],
            "tau": [0.8] * n,
            "accuracy_mean": rng.random(n),
            "accuracy_std": rng.random(n) / 10,
            "default_accuracy": rng.random(n),
        }
    )


def prompt_taxonomy():
    from realitycheck.studies.prompt_multiplicity._figures import taxonomy_figure

    taxonomy_figure(DATASET, _summary())


def prompt_accuracy():
    from realitycheck.studies.prompt_multiplicity._figures import accuracy_figure

    accuracy_figure(DATASET, _summary())


def repetition():
    from realitycheck.studies.repetition._report import plot_repetition

    rows = []
    for kind, metric, names in (
        ("labeler", "share_hallucinated", LABELERS),
        ("detector", "auroc", DETECTORS),
    ):
        for ds in DATASETS[:2]:
            for name in names:
                for k in (0, 1, 2, 4, 8):
                    value = 0.5 + 0.05 * k / 8
                    rows.append(
                        {"kind": kind, "metric": metric, "dataset": ds, "component": name,
                         "k": k, "value": value}
                    )  # fmt: skip
    plot_repetition(pd.DataFrame(rows))


def metric_correlation():
    from realitycheck.studies.metric_correlation import MetricCorrelation

    names = [*DETECTORS, *LABELERS]
    rng = _rng(3)
    long = pd.DataFrame(
        [
            {"a": a, "b": b, "rho": rng.uniform(-1, 1)}
            for i, a in enumerate(names)
            for b in names[i + 1 :]
        ]
    )
    MetricCorrelation()._heatmap(DATASET, names, long, [])


def length_histogram():
    from realitycheck.studies.length._report import plot_lengths

    rng = _rng(4)
    length = pd.Series(rng.integers(1, 900, 400).astype(float))
    y = pd.Series((rng.random(400) < 0.4).astype(float))
    plot_lengths(DATASET, length, y, "words")


def length_accuracy():
    from realitycheck.studies.length._report import plot_accuracy_by_length

    rng = _rng(5)
    rows = []
    for ds in DATASETS:
        for lab in LABELERS:
            for b, (lo, hi) in enumerate(((0, 12), (12, 40), (40, 130), (130, 1250), (1250, 9e3))):
                acc = rng.uniform(0.3, 0.9)
                rows.append(
                    {"dataset": ds, "labeler": lab, "bin": b, "accuracy": acc,
                     "ci_low": acc - 0.1, "ci_high": acc + 0.1, "length_low": lo,
                     "length_high": hi}
                )  # fmt: skip
    plot_accuracy_by_length(pd.DataFrame(rows), "words", 0.95)


def labeler_errors():
    from realitycheck.studies.labeler_agreement._errors import CAUSES, plot_errors

    rng = _rng(6)
    rows = [
        {"dataset": ds, "labeler": lab, "cause": cause, "share_of_items": rng.random() / 5}
        for ds in DATASETS
        for lab in LABELERS
        for _, cause in CAUSES
    ]
    plot_errors(pd.DataFrame(rows))


def labeler_kappa():
    from realitycheck.studies.labeler_agreement._report import plot_kappa

    rng = _rng(7)
    rows = []
    for ds in DATASETS:
        for lab in LABELERS:
            k = rng.uniform(-0.2, 0.9)
            rows.append(
                {"metric": "cohen_kappa", "dataset": ds, "labeler": lab, "value": k,
                 "ci_low": k - 0.1, "ci_high": k + 0.1}
            )  # fmt: skip
    plot_kappa(pd.DataFrame(rows), REFERENCE)


def train_noise():
    from realitycheck.studies.train_noise._report import figure

    conditions = [("clean", ""), *((f"noisy {r:.0%}", "") for r in (0.1, 0.2, 0.3))]
    conditions += [("judge labels", lab) for lab in LABELERS]
    rows = [
        {"condition": c, "source": s, "auroc": 0.7 - 0.02 * i, "auroc_ci_low": 0.6 - 0.02 * i,
         "auroc_ci_high": 0.8 - 0.02 * i}
        for i, (c, s) in enumerate(conditions)
    ]  # fmt: skip
    figure(DATASET, "probe[embedding=false,scores=length*+source_overlap+" + LONG + "]", rows)


def judges_curve():
    from realitycheck.studies.judges import _curve_figure

    rows = []
    for ds in DATASETS[:2]:
        for family in LABELERS[:4]:
            for k in (0, 2, 4, 8, 16):
                row = {"dataset": ds, "family": family, "k": k, "sees_own_annotation": k == 16}
                for value, low, high in (
                    ("balanced_accuracy", "ci_low", "ci_high"),
                    ("sensitivity", "sensitivity_ci_low", "sensitivity_ci_high"),
                    ("specificity", "specificity_ci_low", "specificity_ci_high"),
                ):
                    row |= {value: 0.6 + 0.01 * k, low: 0.5 + 0.01 * k, high: 0.7 + 0.01 * k}
                rows.append(row)
    _curve_figure(pd.DataFrame(rows), REFERENCE)


def context_length():
    from realitycheck.studies.context_length._report import context_figure

    strata = ["0-500", "500-1000", "1000-2000", "2000-4000", "4000+"]
    rng = _rng(8)
    rows = []
    for kind, names in (("detector", DETECTORS), ("labeler", LABELERS)):
        for name in names:
            for metric in ("auroc", "f1"):
                for stratum in strata:
                    v = rng.uniform(0.4, 0.9)
                    rows.append(
                        {"task": "all", "metric": metric, "n": 100, "stratum": stratum,
                         "value": v, "ci_low": v - 0.1, "ci_high": v + 0.1, "kind": kind,
                         "name": name}
                    )  # fmt: skip
    assert context_figure(DATASET, pd.DataFrame(rows), strata) is not None


def benchmark_audit():
    from realitycheck.studies.benchmark_audit import DESIDERATA, STATUSES, _grid

    rows = [
        {"dataset": ds, "desideratum": d, "status": STATUSES[(i + j) % len(STATUSES)]}
        for i, ds in enumerate((*DATASETS, *MODELS))
        for j, d in enumerate(DESIDERATA)
    ]
    _grid(pd.DataFrame(rows))


def label_noise_curve():
    from realitycheck.studies.label_noise._report import curve_figure

    rows = [
        {"signal_kind": kind, "signal": name, "rate": r, "auroc_mean": 0.8 - r,
         "auroc_low": 0.75 - r, "auroc_high": 0.85 - r}
        for kind, names in (("detector", DETECTORS), ("labeler", LABELERS))
        for name in names
        for r in (0.0, 0.1, 0.2, 0.3, 0.4)
    ]  # fmt: skip
    curve_figure(DATASET, pd.DataFrame(rows), 0.1)


def label_noise_ranks():
    from realitycheck.studies.label_noise._report import rank_figure

    rng = _rng(9)
    sets = [("clean", ""), *((f"flip {r:.0%}", "") for r in (0.1, 0.2, 0.3))]
    sets += [("labeler", lab) for lab in LABELERS]
    rows = [
        {"dataset": DATASET, "signal": name, "signal_kind": kind, "condition": c, "source": s,
         "is_noise_source": name == s, "auroc": rng.uniform(0.5, 0.9)}
        for c, s in sets
        for kind, names in (("detector", DETECTORS), ("labeler", LABELERS))
        for name in names
    ]  # fmt: skip
    assert rank_figure(DATASET, pd.DataFrame(rows)) is not None


def model_factors():
    from realitycheck.studies.model_factors import _figure

    sizes = (7e9, 13e9, 70e9)
    trend = pd.DataFrame(
        [
            {"model": m, "family": fam, "size": sizes[i % 3], "rate": 0.3 + 0.1 * i}
            for fam, ms in (("llama-3-" + "x" * 30, MODELS[:3]), (MATHS, MODELS[3:]))
            for i, m in enumerate(ms)
        ]
    )
    table = pd.DataFrame({"model": list(MODELS), "instruction_tuned": ["base", "tuned", "?"] * 2})
    _figure(DATASET, trend, table)


DRAWS = {
    "significance._report.group_figure": "significance",
    "labeler_shift._report.scatter": "labeler_shift",
    "prompt_multiplicity._flow.flow_figure": "prompt_flow",
    "prompt_multiplicity._figures.taxonomy_figure": "prompt_taxonomy",
    "prompt_multiplicity._figures.accuracy_figure": "prompt_accuracy",
    "repetition._report.plot_repetition": "repetition",
    "metric_correlation.MetricCorrelation._heatmap": "metric_correlation",
    "length._report.plot_lengths": "length_histogram",
    "length._report.plot_accuracy_by_length": "length_accuracy",
    "labeler_agreement._errors.plot_errors": "labeler_errors",
    "labeler_agreement._report.plot_kappa": "labeler_kappa",
    "train_noise._report.figure": "train_noise",
    "judges._curve_figure": "judges_curve",
    "context_length._report.context_figure": "context_length",
    "benchmark_audit._grid": "benchmark_audit",
    "label_noise._report.curve_figure": "label_noise_curve",
    "label_noise._report.rank_figure": "label_noise_ranks",
    "model_factors._figure": "model_factors",
    # qa_accuracy and leaderboard draw through it (test_figure_layout.py)
    "leaderboard._plot.dot_plot": "",
}
"""Every function under studies/ that calls png_bytes, and the function here that draws it."""

FIGURES = [
    significance,
    labeler_shift,
    prompt_flow,
    prompt_taxonomy,
    prompt_accuracy,
    repetition,
    metric_correlation,
    length_histogram,
    length_accuracy,
    labeler_errors,
    labeler_kappa,
    train_noise,
    judges_curve,
    context_length,
    benchmark_audit,
    label_noise_curve,
    label_noise_ranks,
    model_factors,
]


@pytest.mark.parametrize("draw", FIGURES, ids=[f.__name__ for f in FIGURES])
def test_study_figure_text_neither_overlaps_nor_leaves_the_figure(caught, draw):
    draw()
    assert caught, "no figure reached png_bytes"
    check(caught[-1])


def _drawing_functions() -> set[str]:
    """``module.function`` (``module.Class.method``) of every png_bytes call under studies/."""
    import ast
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("realitycheck.studies")
    assert spec is not None and spec.submodule_search_locations
    root = Path(spec.submodule_search_locations[0])
    found = set()
    for path in root.rglob("*.py"):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                child.parent = node  # type: ignore[attr-defined]
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and getattr(call.func, "id", "") == "png_bytes"):
                continue
            names, node = [], call
            while (node := getattr(node, "parent", None)) is not None:
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    names.append(node.name)
            found.add(".".join([module, *reversed(names)]))
    return found


def test_every_study_figure_is_checked():
    assert _drawing_functions() == set(DRAWS)
    assert {name for name in DRAWS.values() if name} == {f.__name__ for f in FIGURES}


def test_a_heatmap_with_more_columns_than_fit_keys_its_numbers_beneath(caught):
    """40 signals by 30 label sets: numbered columns, a key naming each, nothing overlapping."""
    from realitycheck.studies.plots import heatmap, png_bytes

    rows = [f"{name} {k}" for k in range(8) for name in DETECTORS[:5]]
    cols = [f"{lab} flipped {k}%" for k in range(5) for lab in LABELERS]
    fig = heatmap(np.zeros((len(rows), len(cols))), rows, cols, heading=DATASET, colorbar="x")
    png_bytes(fig)
    (legend,) = fig.legends
    key = [t.get_text() for t in legend.get_texts()]
    assert [k.split(" ", 1)[0] for k in key] == [str(n) for n in range(1, len(cols) + 1)]
    check(caught[-1])
