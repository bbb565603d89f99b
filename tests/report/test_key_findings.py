"""The key findings: a paired interval on the difference from length, reasons, studies, names."""

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from realitycheck import EvaluationConfig, Example, Label, Response, RunStore, Score, evaluate
from realitycheck.analysis import Bootstrap
from realitycheck.metrics import paired_auroc_bootstrap
from realitycheck.report import write_report
from realitycheck.report._numbers import fmt_diff_ci
from realitycheck.store import StudyResult, StudyTable, save_result

BOOT = Bootstrap(n_resamples=80, seed=3)


def _panel(page: str) -> str:
    return page[page.index('id="key-findings"') : page.index('id="data-overview"')]


def _row(panel: str, dataset: str) -> list[str]:
    """The cells' text of the key table's row of ``dataset``."""
    table = panel[: panel.index("</table>")]
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S):
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if cells and cells[0] == dataset:
            return cells
    raise AssertionError(f"no row for {dataset}")


def test_the_difference_has_a_paired_interval_on_the_responses_both_scored(make_run, tmp_path):
    store = make_run(tmp_path / "run")
    out = write_report(store, tmp_path / "out")
    panel = _panel(out.html.read_text("utf-8"))
    responses = store.frame("responses").merge(store.frame("examples"), on="example_id")
    labels = store.frame("labels")
    human = labels[labels["labeler"] == "human"].set_index("response_id")["hallucinated"]
    scores = store.frame("scores").pivot(index="response_id", columns="detector", values="value")
    for ds in ("alpha", "beta"):
        ids = responses.loc[responses["dataset"] == ds, "response_id"]
        both = scores.loc[ids].dropna()  # noisy fails on about 10% of the responses
        y = human.loc[both.index].astype(int).to_numpy()
        a, b = both["noisy"].to_numpy(), both["length"].to_numpy()
        # evaluate's bootstrap settings, as the manifest records them (conftest: 50 resamples)
        direct = paired_auroc_bootstrap(y, a, b, n_resamples=50, seed=0)
        assert direct.difference == pytest.approx(roc_auc_score(y, a) - roc_auc_score(y, b))
        cells = _row(panel, ds)
        assert cells[5] == fmt_diff_ci(direct.difference, direct.ci_low, direct.ci_high)
        beats = "yes" if direct.ci_low > 0 else "not shown (CI holds 0)"
        assert cells[6] == (beats if direct.ci_high >= 0 else "no: below")
        assert cells[7] == f"{len(y):,}"
    assert "paired bootstrap 95% interval" in panel and "50 resamples" in panel
    assert "difference \\[paired CI\\]" in out.markdown.read_text("utf-8")


def _store(path, *, noisy_on=("alpha",), failed_on=(), one_class=()):
    """Two datasets; ``noisy`` scored only on ``noisy_on``, with no value on ``failed_on``."""
    rng = np.random.default_rng(1)
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    for ds in ("alpha", "beta", "gamma"):
        for i in range(30):
            eid = f"{ds}/{i}"
            examples.append(Example(example_id=eid, dataset=ds, task="qa", question="q?"))
            rid = f"{eid}/m"
            bad = ds in one_class or bool(rng.random() < 0.4)
            responses.append(Response(response_id=rid, example_id=eid, model="m", text="t"))
            labels.append(Label(response_id=rid, labeler="human", hallucinated=bad))
            scores.append(Score(response_id=rid, detector="length", value=float(i)))
            if ds in noisy_on or ds in failed_on:
                failed = ds in failed_on
                value = None if failed else float(bad) + float(rng.normal())
                scores.append(
                    Score(
                        response_id=rid,
                        detector="noisy",
                        value=value,
                        error="timeout" if failed else "",
                    )
                )
    for records in (examples, responses, labels, scores):
        store.append(records)
    evaluate(store, EvaluationConfig(bootstrap=BOOT))
    return store


def test_none_measured_rows_say_why(tmp_path):
    store = _store(tmp_path / "run", failed_on=("beta",), one_class=("gamma",))
    out = write_report(store, tmp_path / "out")
    panel = _panel(out.html.read_text("utf-8"))
    notes = dict(re.findall(r"\[(\d)\] ([^<]+)", panel[panel.index("</table>") :]))
    beta, gamma = _row(panel, "beta"), _row(panel, "gamma")
    assert beta[1].startswith("none measured [") and gamma[1].startswith("none measured [")
    assert notes[beta[1][-2]] == "beta: every score of noisy is missing (the notes give why)."
    assert notes[gamma[1][-2]] == (
        "gamma: no detector other than the length baseline was scored on this dataset "
        "(noisy was scored on other datasets only)."
    )
    # gamma's labels are all hallucinated: the baseline's AUROC is undefined too
    assert gamma[3].startswith("none measured [")
    assert notes[gamma[3][-2]].startswith(
        "gamma: the AUROC of every length baseline against human is undefined (the human "
        "labels of the responses scored hold one class only"
    )
    assert _row(panel, "alpha")[6] in ("yes", "not shown (CI holds 0)", "no: below")
    assert "1,000 resamples" not in panel and "80 resamples, seed 3" in panel


def test_studies_that_measured_nothing_are_not_findings(make_run, tmp_path):
    store = make_run(tmp_path / "run")
    empty = pd.DataFrame(columns=["dataset", "judge", "value"])
    full = pd.DataFrame({"dataset": ["alpha"], "judge": ["j"], "value": [0.5]})
    key = 'train_noise[detectors=probe+"probe[scores=\\"length*\\"+noisy]",weak_labelers=rouge_l]'
    results = [
        StudyResult(
            study="judge_stability",
            spec={"name": "judge_stability", "params": {}, "version": "1"},
            finding="No judge in this run asked the same question more than once.",
            tables=(StudyTable("stability", empty, "Stability."),),
            skipped=("alpha: no judge repeated",),
        ),
        StudyResult(
            study=key,
            spec={"name": "train_noise", "params": {"weak_labelers": ["rouge_l"]}, "version": "1"},
            finding="Training on noisy labels costs 0.05 AUROC. More.",
            tables=(StudyTable("train_noise", full, "Train noise."),),
        ),
    ]
    for result in results:
        save_result(store, result)
    out = write_report(store, tmp_path / "out")
    page = out.html.read_text("utf-8")
    panel = _panel(page)
    assert "No judge in this run asked" not in panel  # its sentence is no finding
    assert re.search(
        r"This study had nothing to measure on this run \(no table row, no figure; the section "
        r'says why\): <a href="#study-judge-stability">[^<]*\(judge_stability\)</a>\.',
        panel,
    )
    assert "(train_noise)</a>: Training on noisy labels costs 0.05 AUROC." in panel
    # headings show the short name; the key, with its escapes, is said once in the section
    headings = re.findall(r"<h3[^>]*>(.*?)</h3>", page)
    assert any(h.endswith("(train_noise)") for h in headings)
    assert not any("\\&quot;" in h or "probe[" in h for h in headings)
    assert "Study key (to run it again): train_noise[detectors=probe+&quot;probe[" in page
    toc = page[page.index('<nav class="toc"') : page.index("</nav>")]
    assert "probe[" not in toc


def test_several_runs_of_one_study_are_told_apart_by_what_differs():
    from realitycheck.report._studies import display_name

    def result(key, params):
        name = key.split("[", 1)[0]
        return StudyResult(study=key, spec={"name": name, "params": params}, finding="")

    a = result("leaderboard[reference=human]", {"reference": "human", "rank_by": "all"})
    b = result("leaderboard[reference=x]", {"reference": "x" * 40, "rank_by": "all"})
    c = result("length", {})
    assert display_name(a, [a, b, c]) == "leaderboard (reference=human)"
    assert display_name(b, [a, b, c]) == "leaderboard (reference=" + "x" * 23 + "\u2026)"
    assert display_name(c, [a, b, c]) == "length"
    assert display_name(a) == "leaderboard"
    same = result("leaderboard[seed=1]", {"reference": "human", "rank_by": "all"})
    assert display_name(same, [a, same]) == "leaderboard #2"  # nothing tells them apart
