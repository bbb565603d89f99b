"""The base rate beside every PR-AUC, and the wrong-way-round mark, in every table written.

One run on one dataset (a good detector, an inverted one, length, an LLM
judge with a score), four studies whose tables hold a PR-AUC (label_noise,
metric_correlation, labeler_agreement, train_noise), its report, and the
runner's own ``metrics.csv``: each CSV carries ``base_rate = n_positive / n``
right after the PR-AUC (after the positives in a long table), and the HTML and
Markdown study tables show it as a 3-decimal fraction, never a percentage.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest

import realitycheck.analysis
import realitycheck.report._cells
from realitycheck import EvaluationConfig, Example, Label, Response, RunStore, Score, evaluate
from realitycheck.analysis import Bootstrap
from realitycheck.report import with_base_rate, write_report
from realitycheck.report._cells import WRONG_WAY, WRONG_WAY_NOTE, has_pr_auc
from realitycheck.report._markdown import escape_md
from realitycheck.report._numbers import fmt_ci
from realitycheck.report._studies import studies_section
from realitycheck.runner import measure_run, run_studies
from realitycheck.store import StudyResult, StudyTable

STUDIES = ("label_noise", "labeler_agreement", "metric_correlation", "train_noise")
N_EXAMPLES = 100

# study folder, table, (items, positives), the column the base rate follows
WITH_PR_AUC = [
    ("metric_correlation", "ensemble", ("n", "n_positive"), "pr_auc_ci_high"),
    ("label_noise", "noise_effect", ("n", "n_positive"), "pr_auc_ci_high"),
    ("train_noise", "train_noise", ("n_test", "n_test_positive"), "pr_auc_ci_high"),
    ("labeler_agreement", "agreement", ("n", "n_positive"), "n_positive"),  # long table
]


def _build(path) -> RunStore:
    """Human labels (30% hallucinated), a judge with a score, three detectors, evaluated."""
    rng = np.random.default_rng(11)
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
            verdict = y if rng.random() < 0.85 else not y
            judge = float(y) + 0.5 * float(rng.normal())
            labels.append(
                Label(response_id=rid, labeler="judge", hallucinated=verdict, score=judge)
            )
            values = {
                "inverted": 1 - float(y) + 0.3 * float(rng.normal()),
                "good": float(y) + 0.3 * float(rng.normal()),
                "length": float(rng.integers(1, 50)),
            }
            scores += [Score(response_id=rid, detector=d, value=v) for d, v in values.items()]
    for records in (examples, responses, labels, scores):
        store.append(records)
    evaluate(store, EvaluationConfig(bootstrap=Bootstrap(n_resamples=100)))
    return store


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("base_rate")
    store = _build(root / "run")
    runs = run_studies(store, list(STUDIES), bootstrap=Bootstrap(n_resamples=50))
    assert sorted(r.result.study for r in runs) == sorted(STUDIES)
    out = root / "out"
    files = write_report(store, out)
    return store, files, out


def _assert_base_rate(frame: pd.DataFrame, counts: tuple[str, str], before: str) -> None:
    columns = list(frame.columns)
    assert columns[columns.index(before) + 1] == "base_rate", columns
    n, positive = frame[counts[0]].to_numpy(float), frame[counts[1]].to_numpy(float)
    assert len(frame) and (n > 0).all()
    np.testing.assert_allclose(frame["base_rate"].to_numpy(float), positive / n)


def _html_table(page: str, csv: str) -> tuple[list[str], list[list[str]], str]:
    """Headers, rows (unescaped cell texts) and foot of the HTML table whose CSV is ``csv``."""
    link = page.index(f'href="{csv}"')
    start = page.rfind("<table", 0, link)
    table = page[start : page.index("</table>", start)]
    foot = page[page.index("</table>", start) : link]
    headers = [html.unescape(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]
    rows = [
        [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
    ]
    return headers, [r for r in rows if r], html.unescape(foot)


def test_the_report_uses_the_one_public_wrong_way_rule():
    assert realitycheck.report._cells.wrong_way is realitycheck.analysis.wrong_way


@pytest.mark.parametrize("name", ["metrics.csv", "agreement.csv"])
def test_metrics_and_agreement_csvs_carry_the_base_rate(built, name):
    store, _, out = built
    frame = pd.read_csv(out / name)
    _assert_base_rate(frame, ("n", "n_positive"), "n_positive")
    # Counted by hand from the stored human labels: the PR-AUC's items and its positives.
    labels = store.frame("labels")
    human = labels[labels["labeler"] == "human"]["hallucinated"]
    pr = frame[(frame["metric"] == "pr_auc") & (frame["slice"] == "all")]
    pr = pr[pr["labeler" if name == "metrics.csv" else "reference"] == "human"]
    assert len(pr)
    assert (pr["base_rate"] == human.sum() / len(human)).all()
    # Nothing else is added or dropped.
    stored = store.frame(name.removesuffix(".csv"))
    assert sorted(frame.drop(columns="base_rate").columns) == sorted(stored.columns)
    assert len(frame) == len(stored)


def test_the_runner_writes_the_base_rate_too(built, tmp_path):
    store, _, out = built
    config = EvaluationConfig(bootstrap=Bootstrap(n_resamples=100))
    measure_run(store, [], [], config, datasets=None, out=tmp_path, report=False)
    assert not (tmp_path / "report.html").exists()
    for name in ("metrics.csv", "agreement.csv"):
        ours = pd.read_csv(tmp_path / name)
        _assert_base_rate(ours, ("n", "n_positive"), "n_positive")
        measured = ["detector", "labeler"] if name == "metrics.csv" else ["labeler", "reference"]
        key = ["dataset", "slice", *measured, "metric"]
        both = ours.merge(pd.read_csv(out / name), on=key, suffixes=("", "_report"))
        assert len(both) == len(ours)
        np.testing.assert_array_equal(both["base_rate"], both["base_rate_report"])


@pytest.mark.parametrize(("study", "table", "counts", "before"), WITH_PR_AUC)
def test_study_csvs_put_the_base_rate_beside_the_pr_auc(built, study, table, counts, before):
    store, _, out = built
    _assert_base_rate(pd.read_csv(out / "studies" / study / f"{table}.csv"), counts, before)
    stored = pd.read_csv(store.path / "studies" / study / f"{table}.csv")
    assert "base_rate" not in stored.columns  # the study stores its own table; the report adds it


def test_study_csvs_without_a_pr_auc_keep_their_columns(built):
    _, files, out = built
    written = [p for p in files.tables if p.parent.parent == out / "studies"]
    assert len(written) > len(WITH_PR_AUC)
    for path in written:
        frame = pd.read_csv(path)
        has = "pr_auc" in frame.columns or (
            "metric" in frame.columns and (frame["metric"] == "pr_auc").any()
        )
        assert ("base_rate" in frame.columns) is bool(has), path


@pytest.mark.parametrize(("study", "table", "counts", "before"), WITH_PR_AUC)
def test_study_html_tables_show_the_base_rate_as_a_fraction(built, study, table, counts, before):
    _, files, out = built
    page = files.html.read_text("utf-8")
    headers, rows, _ = _html_table(page, f"studies/{study}/{table}.csv")
    frame = pd.read_csv(out / "studies" / study / f"{table}.csv")
    at = headers.index("base rate")
    if before == "pr_auc_ci_high":
        assert headers[at - 1] == "PR-AUC [CI]"
    rates = [f"{p / n:.3f}" for n, p in zip(frame[counts[0]], frame[counts[1]], strict=True)]
    assert [r[at] for r in rows] == rates[: len(rows)]
    assert not any(r[at].endswith("%") for r in rows)


def test_an_inverted_auroc_in_a_study_table_is_marked(built):
    store, files, out = built
    page = files.html.read_text("utf-8")
    headers, rows, foot = _html_table(page, "studies/metric_correlation/ensemble.csv")
    frame = pd.read_csv(out / "studies" / "metric_correlation" / "ensemble.csv")
    at = headers.index("AUROC [CI]")
    by_signal = {r[headers.index("signal")]: r[at] for r in rows}
    inverted = frame[frame["signal"] == "inverted"].iloc[0]
    assert inverted["auroc_ci_high"] < 0.5
    text = fmt_ci(inverted["auroc"], inverted["auroc_ci_low"], inverted["auroc_ci_high"])
    assert by_signal["inverted"] == f"{text} {WRONG_WAY}"
    assert WRONG_WAY not in by_signal["good"] and WRONG_WAY not in by_signal["length"]
    assert WRONG_WAY_NOTE in foot
    markdown = files.markdown.read_text("utf-8")
    assert "| AUROC \\[CI\\] | PR-AUC \\[CI\\] | base rate |" in markdown
    assert escape_md(f"{text} {WRONG_WAY}") in markdown
    # A study table with no AUROC below chance gets no note.
    _, _, foot = _html_table(page, "studies/train_noise/train_noise.csv")
    assert WRONG_WAY_NOTE not in foot


def test_a_long_study_table_marks_only_its_auroc_rows():
    ends = {"value": 0.2, "ci_low": 0.1, "ci_high": 0.3, "n": 40, "n_positive": 10}
    frame = pd.DataFrame(
        [
            {"detector": "d", "metric": "auroc", **ends},
            {"detector": "d", "metric": "pr_auc", **ends},
            {"detector": "e", "metric": "auroc", **ends, "ci_high": 0.5},  # touches chance
        ]
    )
    result = StudyResult(study="s", spec={}, finding="f", tables=(StudyTable("t", frame, "c"),))
    table = next(b for b in studies_section([result]) if hasattr(b, "rows"))
    cells = {(r[0], r[1]): r for r in table.rows}
    value = table.columns.index("value [CI]")
    rate = table.columns.index("base rate")
    assert cells["d", "auroc"][value] == f"0.200 [0.100, 0.300] {WRONG_WAY}"
    assert cells["d", "pr_auc"][value] == "0.200 [0.100, 0.300]"
    assert cells["e", "auroc"][value] == "0.200 [0.100, 0.500]"
    assert [r[rate] for r in table.rows] == ["0.250"] * 3
    assert table.footnotes == (WRONG_WAY_NOTE,)


def test_with_base_rate_reads_the_test_split_counts_and_keeps_an_interval_by_its_value():
    frame = pd.DataFrame(
        {"pr_auc": [0.4], "ci_low": [0.3], "ci_high": [0.5], "n_test": [8], "n_test_positive": [2]}
    )
    out = with_base_rate(frame)
    assert list(out.columns) == ["pr_auc", "ci_low", "ci_high", "base_rate", "n_test"] + [
        "n_test_positive"
    ]
    assert out["base_rate"].tolist() == [0.25]
    # n and n_positive come first where a table has both pairs.
    both = frame.assign(n=[10], n_positive=[5])
    assert with_base_rate(both)["base_rate"].tolist() == [0.5]


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (pd.DataFrame({"pr_auc": [0.3]}), True),
        (pd.DataFrame({"metric": ["auroc", "pr_auc"]}), True),
        (pd.DataFrame({"metric": ["auroc", "kappa"]}), False),
        (pd.DataFrame({"auroc": [0.3], "n": [3], "n_positive": [1]}), False),
    ],
)
def test_has_pr_auc(frame, expected):
    assert has_pr_auc(frame) is expected
