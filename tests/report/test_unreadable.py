"""The report counts, per component that asks a model, the records whose replies it could not read.

A component whose records were mostly unreadable (more than half: unreadable
replies, or labels of category ``invalid``) is flagged in the key findings.
"""

from __future__ import annotations

import pandas as pd
import pytest

from realitycheck import Label, Score
from realitycheck.report import write_report
from realitycheck.report._data import coverage, load

JUDGE = 'qa_judge[judge=mock[reply="<b>x</b>"]]'
SELFCHECK = "selfcheck_prompt[judge=mock]"


def _spec(name):
    backend = {"name": "mock", "params": {"model": "mock", "reply": "<b>x</b>"}, "version": "1"}
    return {"name": name, "params": {"judge": backend, "max_tokens": 8}, "version": "1"}


@pytest.fixture(scope="module")
def files(make_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("unreadable")
    store = make_run(root / "run")
    ids = sorted(store.frame("responses")["response_id"])
    alpha = [r for r in ids if r.startswith("alpha/")]
    beta = [r for r in ids if r.startswith("beta/")]
    labels = []
    for i, rid in enumerate(alpha):  # 20 of 32 replies gave no verdict: flagged
        if i < 20:
            labels.append(
                Label(
                    response_id=rid,
                    labeler=JUDGE,
                    hallucinated=True,  # invalid_as=hallucinated gives it a value, still invalid
                    category="invalid",
                    raw="I think\x1b[31m it is <script>maybe</script>",
                    error="no conclusion",
                    unreadable=1,
                )
            )
        else:
            labels.append(Label(response_id=rid, labeler=JUDGE, hallucinated=False, raw="ok"))
    for i, rid in enumerate(beta):  # 3 of 32: counted, not flagged
        labels.append(
            Label(
                response_id=rid,
                labeler=JUDGE,
                hallucinated=None if i < 3 else bool(i % 2),
                category="invalid" if i < 3 else "",
                error="no conclusion" if i < 3 else "",
                unreadable=1 if i < 3 else 0,
            )
        )
    # A documented option gives unreadable replies 0.5; they are still counted (17 of 32).
    scores = [
        Score(response_id=rid, detector=SELFCHECK, value=0.5, unreadable=3 if i <= 16 else 0)
        for i, rid in enumerate(alpha)
    ]
    store.append(labels)
    store.append(scores)
    store.update_manifest(components={JUDGE: _spec("qa_judge"), SELFCHECK: _spec("selfcheck")})
    return store, write_report(store, root / "out")


def _panel(page: str) -> str:
    return page[page.index('id="key-findings"') : page.index('id="data-overview"')]


def test_coverage_counts_unreadable_records_per_component(files):
    store, out = files
    cov = coverage(load(store)).set_index(["dataset", "key"])
    assert cov.loc[("alpha", JUDGE), "unreadable"] == 20
    assert cov.loc[("beta", JUDGE), "unreadable"] == 3
    assert cov.loc[("alpha", SELFCHECK), "unreadable"] == 17
    assert cov.loc[("alpha", "rouge_l"), "unreadable"] == 0
    assert cov.loc[("alpha", JUDGE), "llm_backed"]
    assert not cov.loc[("alpha", "rouge_l"), "llm_backed"]
    csv = pd.read_csv(next(p for p in out.tables if p.name == "coverage.csv"))
    assert {"unreadable", "llm_backed"} <= set(csv.columns)


def test_mostly_unreadable_components_are_flagged_in_the_key_findings(files):
    _, out = files
    panel = _panel(out.html.read_text("utf-8"))
    assert "Replies that could not be read" in panel
    escaped = "qa_judge[judge=mock[reply=&quot;&lt;b&gt;x&lt;/b&gt;&quot;]]"
    assert f"Mostly unreadable: labeler {escaped} on alpha: 20 of 32 records" in panel
    assert f"Mostly unreadable: detector {SELFCHECK} on alpha: 17 of 32 records" in panel
    assert f"labeler {escaped} on beta: 3 of 32 records had replies it could not read." in panel
    assert "Mostly unreadable: labeler " + escaped + " on beta" not in panel
    assert "<b>x</b>" not in out.html.read_text("utf-8")  # the key is escaped everywhere
    assert "rouge_l on alpha: 0 of" not in panel  # a component that asks no model: no line
    markdown = out.markdown.read_text("utf-8")
    assert "Mostly unreadable: labeler" in markdown and "<b>" not in markdown


def test_the_coverage_table_shows_unreadable_replies_where_a_component_asks_a_model(files):
    _, out = files
    page = out.html.read_text("utf-8")
    assert "unreadable replies" in page


def test_a_run_without_models_says_nothing_about_unreadable_replies(run, tmp_path):
    out = write_report(run, tmp_path / "plain")
    page = out.html.read_text("utf-8")
    assert "Replies that could not be read" not in page
    assert "unreadable replies" not in page


def test_failed_calls_get_their_own_finding_with_the_commonest_failure(make_run, tmp_path):
    store = make_run(tmp_path / "run")
    ids = sorted(r for r in store.frame("responses")["response_id"] if r.startswith("alpha/"))
    wrong = 'qa_judge[judge=openai[model="gtp-4o\x1b[31m"]]'
    labels = [
        Label(
            response_id=rid,
            labeler=wrong,
            hallucinated=None,
            error=f"HTTP 400: model 'gtp-4o' does not exist <script>{i % 2}</script>"
            if i < 10
            else "the example has no reference",  # missing, not failed
            failed=i < 10,
            retryable=False,
        )
        for i, rid in enumerate(ids)
    ]
    labels[0] = Label(  # a part written before 'failed' existed: retryable alone counts
        response_id=ids[0], labeler=wrong, hallucinated=None, error="HTTP 503", retryable=True
    )
    store.append(labels)
    cov = coverage(load(store)).set_index(["dataset", "key"])
    assert cov.loc[("alpha", wrong), "failed"] == 10
    assert cov.loc[("alpha", wrong), "most_common_failure"].startswith("HTTP 400: model")
    assert cov.loc[("alpha", "rouge_l"), "failed"] == 0
    page = write_report(store, tmp_path / "out").html.read_text("utf-8")
    panel = _panel(page)
    assert 'id="key-failed"' in panel and "10 of 32 records have no value because a call" in panel
    assert "<script>" not in panel and "\x1b" not in panel  # escaped, as every key and error
    assert "no reference" not in panel  # the commonest *failure*, not the commonest error
