"""Scores ranked the wrong way round, and the base rate beside every PR-AUC.

One run on one dataset: an inverted detector (``1 - label + noise``), a good
one, one that is noise (its AUROC interval straddles 0.5), an inverted one
with a hostile name, a labeler whose score is inverted, and a stored AUROC
without an interval.
"""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pandas as pd
import pytest

from realitycheck import (
    EvaluationConfig,
    Example,
    Label,
    MetricResult,
    Response,
    RunStore,
    Score,
    evaluate,
)
from realitycheck.analysis import Bootstrap
from realitycheck.report import write_report
from realitycheck.report._cells import (
    BASE_RATE,
    WRONG_WAY,
    WRONG_WAY_NOTE,
    base_rate,
    metric_text,
    with_base_rate,
    wrong_way,
)
from realitycheck.report._markdown import escape_md
from realitycheck.report._numbers import fmt_ci

HOSTILE = "<img src=x onerror=alert(1)>[x](javascript:alert(1))"
LEAD = "Ranked the wrong way round: higher means less likely hallucinated?"
N_EXAMPLES = 150


def _build(path) -> RunStore:
    rng = np.random.default_rng(7)
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    for i in range(N_EXAMPLES):
        eid = f"alpha/{i}"
        examples.append(Example(example_id=eid, dataset="alpha", task="qa", question="q?"))
        for model in ("gen-a", "gen-b"):
            rid = f"{eid}/{model}"
            y = bool(rng.random() < 0.3)
            responses.append(Response(response_id=rid, example_id=eid, model=model, text="t"))
            labels.append(Label(response_id=rid, labeler="human", hallucinated=y))
            inverse = 1 - float(y) + 0.3 * float(rng.normal())
            labels.append(
                Label(
                    response_id=rid,
                    labeler="inverse_judge",
                    hallucinated=bool(rng.random() < 0.5),
                    score=inverse,
                )
            )
            values = {
                "inverted": 1 - float(y) + 0.3 * float(rng.normal()),
                "good": float(y) + 0.3 * float(rng.normal()),
                "noise": float(rng.normal()),
                HOSTILE: 1 - float(y) + 0.3 * float(rng.normal()),
            }
            scores += [Score(response_id=rid, detector=d, value=v) for d, v in values.items()]
    for records in (examples, responses, labels, scores):
        store.append(records)
    evaluate(store, EvaluationConfig(bootstrap=Bootstrap(n_resamples=200)))
    # An AUROC far below 0.5 without an interval (too few items to draw one): not judged.
    store.append(
        [
            MetricResult(
                detector="tiny",
                labeler="human",
                metric=metric,
                value=0.1,
                ci_low=math.nan,
                ci_high=math.nan,
                n=3,
                n_positive=1,
                n_excluded=0,
                dataset="alpha",
            )
            for metric in ("auroc", "pr_auc")
        ]
    )
    return store


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("wrong_way")
    store = _build(root / "run")
    return store, write_report(store, root / "out")


def _stored(store, table: str, detector: str, metric: str, sl: str = "all") -> pd.Series:
    """The row of ``detector`` (a labeler, in the agreement table) against human labels."""
    df = store.frame(table)
    measured, truth = ("detector", "labeler") if table == "metrics" else ("labeler", "reference")
    rows = df[
        (df["dataset"] == "alpha")
        & (df["slice"] == sl)
        & (df[measured] == detector)
        & (df[truth] == "human")
        & (df["metric"] == metric)
    ]
    assert len(rows) == 1
    return rows.iloc[0]


def _panel(page: str) -> str:
    return page[page.index('id="key-findings"') : page.index('id="data-overview"')]


def _ranking_rows(page: str) -> dict[str, list[str]]:
    """The first table of the detector metrics: detector -> its cells (against human)."""
    part = page[page.index('id="detector-metrics"') :]
    table = part[: part.index("</table>")]
    out = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S):
        cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)]
        if cells and cells[1] == "human":
            out[cells[0]] = cells
    return out


def test_the_constructed_scores_are_what_the_cases_need(files):
    store, _ = files
    for det in ("inverted", HOSTILE):
        assert _stored(store, "metrics", det, "auroc")["ci_high"] < 0.5
    assert _stored(store, "metrics", "good", "auroc")["ci_low"] > 0.5
    noise = _stored(store, "metrics", "noise", "auroc")
    assert noise["ci_low"] < 0.5 < noise["ci_high"]
    assert _stored(store, "agreement", "inverse_judge", "auroc")["ci_high"] < 0.5
    assert math.isnan(_stored(store, "metrics", "tiny", "auroc")["ci_high"])


def test_an_inverted_detector_is_marked_in_the_html_table(files):
    store, out = files
    page = out.html.read_text("utf-8")
    rows = _ranking_rows(page)
    r = _stored(store, "metrics", "inverted", "auroc")
    assert rows["inverted"][2] == f"{fmt_ci(r['value'], r['ci_low'], r['ci_high'])} {WRONG_WAY}"
    assert html.escape(WRONG_WAY_NOTE, quote=False) in page
    for det in ("good", "noise", "tiny"):
        assert WRONG_WAY not in rows[det][2], det
    assert rows["tiny"][2] == "0.100"  # no interval: shown as it is, not judged


def test_an_inverted_detector_is_marked_in_the_markdown_table(files):
    store, out = files
    markdown = out.markdown.read_text("utf-8")
    for det in ("inverted", "good", "noise"):
        r = _stored(store, "metrics", det, "auroc")
        text = metric_text("auroc", r["value"], r["ci_low"], r["ci_high"])
        assert f"| {escape_md(det)} | human | {escape_md(text)} |" in markdown
        assert (WRONG_WAY in text) is (det == "inverted")
    assert escape_md(WRONG_WAY_NOTE) in markdown


def test_the_key_findings_name_the_inverted_detectors_only(files):
    store, out = files
    panel = _panel(out.html.read_text("utf-8"))
    assert 'id="key-wrong-way"' in panel
    r = _stored(store, "metrics", "inverted", "auroc")
    pr = _stored(store, "metrics", "inverted", "pr_auc")
    item = (
        f"{LEAD} Detector inverted on alpha, against human labels, all responses: "
        f"AUROC {fmt_ci(r['value'], r['ci_low'], r['ci_high'])} (n = {r['n']:,}; "
        f"PR-AUC {pr['value']:.3f}, base rate {pr['n_positive'] / pr['n']:.3f})"
    )
    assert html.escape(item, quote=False) in panel
    assert "Detector good on" not in panel
    assert "Detector noise on" not in panel
    assert "Detector tiny on" not in panel
    j = _stored(store, "agreement", "inverse_judge", "auroc")
    assert (
        f"The score of labeler inverse_judge on alpha, against human labels, all responses: "
        f"AUROC {fmt_ci(j['value'], j['ci_low'], j['ci_high'])}" in panel
    )
    markdown = out.markdown.read_text("utf-8")
    assert escape_md(item) in markdown


def test_a_hostile_detector_name_is_escaped_in_the_finding(files):
    _, out = files
    page = out.html.read_text("utf-8")
    panel = _panel(page)
    assert f"Detector {html.escape(HOSTILE, quote=False)} on alpha" in panel
    assert "<img src=x" not in page and "javascript:alert(1))" in page  # text, never a tag
    assert 'href="javascript' not in page
    markdown = out.markdown.read_text("utf-8")
    assert f"Detector {escape_md(HOSTILE)} on alpha" in markdown
    assert re.search(r"(?<!\\)\[x(?<!\\)\]\(javascript", markdown) is None  # never a link


def test_slices_ranked_the_wrong_way_are_marked_and_listed(files):
    store, out = files
    page = out.html.read_text("utf-8")
    for model in ("gen-a", "gen-b"):
        r = _stored(store, "metrics", "inverted", "auroc", f"model={model}")
        assert r["ci_high"] < 0.5
        text = f"{fmt_ci(r['value'], r['ci_low'], r['ci_high'])} {WRONG_WAY}"
        assert f'<td class="r">{html.escape(text)}</td>' in page  # the per-slice table
        assert f"slice model={model}: AUROC {fmt_ci(r['value'], r['ci_low'], r['ci_high'])}" in (
            _panel(page)
        )


def test_every_pr_auc_is_followed_by_its_base_rate(files):
    store, out = files
    page = out.html.read_text("utf-8")
    rows = _ranking_rows(page)
    labels = store.frame("labels")
    human = labels[labels["labeler"] == "human"].set_index("response_id")["hallucinated"]
    for det in ("inverted", "good", "noise"):
        pr = _stored(store, "metrics", det, "pr_auc")
        assert rows[det][3] == fmt_ci(pr["value"], pr["ci_low"], pr["ci_high"])
        assert rows[det][4] == f"{pr['n_positive'] / pr['n']:.3f}"
        assert pr["n"] == len(human) and pr["n_positive"] == int(human.sum())  # hand count
    assert f'<th scope="col">PR-AUC</th><th scope="col">{BASE_RATE}</th>' in page
    assert rows["tiny"][4] == f"{1 / 3:.3f}"
    method = page[page.index('id="run-information"') :]
    assert "Beside each PR-AUC, its base rate" in method and f"marked {WRONG_WAY}" in method
    markdown = out.markdown.read_text("utf-8")
    assert f"| PR-AUC | {BASE_RATE} |" in markdown
    # The agreement table: a labeler's score, its base rate after its PR-AUC.
    j = _stored(store, "agreement", "inverse_judge", "pr_auc")
    cell = fmt_ci(j["value"], j["ci_low"], j["ci_high"])
    assert f"| {escape_md(cell)} | {j['n_positive'] / j['n']:.3f} |" in markdown


@pytest.mark.parametrize(
    ("metric", "value", "low", "high", "flagged"),
    [
        ("auroc", 0.30, 0.20, 0.49, True),
        ("auroc", 0.30, 0.20, 0.50, False),  # touches chance: not wholly below
        ("auroc", 0.45, 0.30, 0.60, False),  # straddles chance
        ("auroc", 0.90, 0.85, 0.95, False),
        ("auroc", 0.10, math.nan, math.nan, False),  # no interval: not judged
        ("auroc", math.nan, 0.1, 0.2, False),
        ("auroc", 0.10, None, None, False),
        ("pr_auc", 0.10, 0.05, 0.20, False),  # only an AUROC is judged
        ("prr", -0.5, -0.6, -0.4, False),
    ],
)
def test_wrong_way_needs_an_auroc_interval_wholly_below_chance(metric, value, low, high, flagged):
    assert wrong_way(metric, value, low, high) is flagged
    assert metric_text(metric, value, low, high).endswith(WRONG_WAY) is flagged


@pytest.mark.parametrize(
    ("n", "n_positive", "expected"),
    [(10, 3, 0.3), (4, 4, 1.0), (5, 0, 0.0), (0, 0, math.nan), (None, 1, math.nan)],
)
def test_base_rate_is_the_share_of_positives(n, n_positive, expected):
    got = base_rate(n, n_positive)
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)


def test_with_base_rate_adds_a_column_after_the_positives():
    frame = pd.DataFrame(
        {"metric": ["auroc", "pr_auc", "pr_auc"], "n": [10, 10, 0], "n_positive": [3, 3, 0]}
    )
    out = with_base_rate(frame)
    assert list(out.columns) == ["metric", "n", "n_positive", "base_rate"]
    assert out["base_rate"].iloc[:2].tolist() == [0.3, 0.3]
    assert math.isnan(out["base_rate"].iloc[2])
    assert list(frame.columns) == ["metric", "n", "n_positive"]  # not changed in place
    assert with_base_rate(out).equals(out)  # idempotent
    plain = pd.DataFrame({"a": [1]})
    assert with_base_rate(plain) is plain


def test_with_base_rate_sits_beside_the_pr_auc_of_a_wide_table():
    frame = pd.DataFrame(
        {
            "detector": ["a", "b"],
            "auroc": [0.7, 0.6],
            "pr_auc": [0.5, 0.4],
            "pr_auc_ci_low": [0.4, 0.3],
            "pr_auc_ci_high": [0.6, 0.5],
            "n": [20, 8],
            "n_positive": [5, 2],
        }
    )
    out = with_base_rate(frame)
    assert list(out.columns)[4:6] == ["pr_auc_ci_high", "base_rate"]
    assert out["base_rate"].tolist() == [0.25, 0.25]
