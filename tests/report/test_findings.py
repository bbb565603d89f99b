import re

import pandas as pd
import pytest

from realitycheck.report import write_report
from realitycheck.report._data import load
from realitycheck.report._findings import first_sentence
from realitycheck.report._leaderboard import leaderboard_frame
from realitycheck.report._numbers import fmt_ci
from realitycheck.store import StudyResult, StudyTable, save_result


@pytest.fixture(scope="module")
def files(make_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("findings")
    store = make_run(root / "run")
    inversions = pd.DataFrame(
        {
            "dataset": ["alpha", "alpha", "alpha"],
            "slice": ["all", "all", "model=gen-a"],
            "judge": ["rouge_l", "judge_b", "rouge_l"],
            "judge_kind": ["labeler", "labeler", "labeler"],
            "n_pairs": [10, 10, 3],
            "n_discordant": [7, 2, 3],
            "kendall_tau_b": [-0.4, 0.6, -1.0],
        }
    )
    save_result(
        store,
        StudyResult(
            study="leaderboard",
            spec={"name": "leaderboard", "params": {}, "version": "1"},
            finding="Judges disagree. Second sentence is not shown up front.",
            tables=(StudyTable("inversions", inversions, "Inversions."),),
        ),
    )
    return store, write_report(store, root / "out")


def _panel(page: str) -> str:
    return page[page.index('id="key-findings"') : page.index('id="data-overview"')]


def test_the_panel_opens_the_report(files):
    _, out = files
    page = out.html.read_text("utf-8")
    assert page.index('id="key-findings"') < page.index('id="data-overview"')
    assert page.index('id="run-information"') > page.index('id="notes"')


def test_best_detector_is_set_against_the_length_baseline(files):
    store, out = files
    m = store.frame("metrics")
    m = m[(m["slice"] == "all") & (m["labeler"] == "human") & (m["metric"] == "auroc")]
    panel = _panel(out.html.read_text("utf-8"))
    for ds in ("alpha", "beta"):
        row = m[m["dataset"] == ds].set_index("detector")
        for det in ("noisy", "length"):
            r = row.loc[det]
            assert fmt_ci(r["value"], r["ci_low"], r["ci_high"]) in panel
    # their difference has a paired interval: tests/report/test_key_findings.py
    assert "difference [paired CI]" in panel


def test_each_labeler_agreement_is_shown(files):
    store, out = files
    a = store.frame("agreement")
    row = a[
        (a["dataset"] == "alpha")
        & (a["slice"] == "all")
        & (a["labeler"] == "rouge_l")
        & (a["reference"] == "human")
    ].set_index("metric")
    panel = _panel(out.html.read_text("utf-8"))
    kappa = row.loc["cohen_kappa"]
    assert fmt_ci(kappa["value"], kappa["ci_low"], kappa["ci_high"]) in panel
    assert f"{100 * row.loc['accuracy', 'value']:.1f}%" in panel


def test_headline_inversion_and_study_sentences_link_to_their_sections(files):
    _, out = files
    page = out.html.read_text("utf-8")
    panel = _panel(page)
    assert "judged by rouge_l, 7 of 10 generator pairs rank the other way round" in panel
    assert "Judges disagree." in panel and "Second sentence" not in panel
    targets = set(re.findall(r'href="#([^"]+)"', panel))
    assert targets and all(f'id="{t}"' in page for t in targets)
    assert 'href="leaderboard.html"' in panel
    markdown = out.markdown.read_text("utf-8")
    assert "Judges disagree." in markdown
    assert "measured against it). [Leaderboard page](leaderboard.html), [study](#" in markdown
    for target in re.findall(r"\]\(#([^)]+)\)", markdown):
        assert f'<a id="{target}"></a>' in markdown


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("One. Two.", "One."),
        ("Rate 0.5 of 3. Next", "Rate 0.5 of 3."),
        ("No stop", "No stop"),
        ("e.g. this stays. Then", "e.g. this stays."),
    ],
)
def test_first_sentence(text, first):
    assert first_sentence(text) == first


def test_leaderboard_rates_equal_a_hand_count(files):
    store, out = files
    frame = leaderboard_frame(load(store), "human").set_index(["dataset", "subset", "generator"])
    labels = store.frame("labels")
    human = labels[labels["labeler"] == "human"].set_index("response_id")["hallucinated"]
    for ds in ("alpha", "beta"):
        for model in ("gen-a", "gen-b"):
            ids = [f"{ds}/{i}/{model}" for i in range(16)]
            row = frame.loc[(ds, "all", model)]
            assert row["n"] == 16
            assert row["n_hallucinated"] == int(human.loc[ids].sum())
            assert row["ci_low"] <= row["rate"] <= row["ci_high"]
    assert {s for _, s, _ in frame.index} == {"all", "qa", "summary"}  # alpha has two tasks
    assert out.leaderboard.read_text("utf-8").count("<table") == 2


def test_leaderboard_ties_share_the_lower_rank(make_run, tmp_path):
    store = make_run(tmp_path / "run", models=("m1", "m2", "m3"), seed=3)
    labels = store.frame("labels")
    frame = leaderboard_frame(load(store), "human")
    part = frame[(frame["dataset"] == "beta") & (frame["subset"] == "all")]
    expected = part["rate"].rank(method="min").astype(int)
    assert part["rank"].tolist() == expected.tolist()
    assert part["tied"].tolist() == part["rate"].duplicated(keep=False).tolist()
    assert not labels.empty
