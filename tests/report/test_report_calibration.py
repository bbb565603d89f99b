"""The report's calibration and selective-prediction parts: table, PRR column, figures."""

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss

from realitycheck import EvaluationConfig, Score, evaluate
from realitycheck.analysis import Bootstrap, calibrate
from realitycheck.report import write_report
from realitycheck.report._calibration import _scored, selective_figures
from realitycheck.report._data import load

HOSTILE = "det $x^$ abc\u202egnp.exe"


@pytest.fixture(scope="module")
def report(run, tmp_path_factory):
    return write_report(run, tmp_path_factory.mktemp("cal") / "out", title="Tiny run")


def _row(run, dataset, detector, metric):
    m = run.frame("metrics").set_index(["dataset", "slice", "detector", "labeler", "metric"])
    return m.loc[(dataset, "all", detector, "human", metric)]


def test_prr_sits_beside_auroc_and_ece_brier_have_their_table(run, report):
    page = report.html.read_text(encoding="utf-8")
    for metric in ("prr", "ece", "brier"):
        row = _row(run, "alpha", "noisy", metric)
        assert (
            f'<td class="r">{row["value"]:.3f} [{row["ci_low"]:.3f}, {row["ci_high"]:.3f}]</td>'
            in page
        )
    assert "<th" in page and ">PRR</th>" in page and ">ECE</th>" in page and ">Brier</th>" in page
    assert "Platt scaling fitted on" in page
    assert "ECE uses 10 equal-width bins" in page
    assert "ECE (10 equal-width bins) and the Brier score judge probabilities" in page


def test_the_reliability_refit_is_the_one_evaluate_measured(run):
    data = load(run)
    for item in _scored(data, "alpha", "human", ["noisy", "length"]):
        fit = ~item.test
        probs, _ = calibrate(item.y[fit].astype(float), item.s[fit], item.s[item.test], "platt")
        stored = _row(run, "alpha", item.detector, "brier")["value"]
        assert brier_score_loss(item.y[item.test], probs) == pytest.approx(stored, abs=1e-12)


def test_figures_with_hostile_detector_names_render(make_run, tmp_path):
    store = make_run(tmp_path / "run")
    rng = np.random.default_rng(1)
    ids = store.frame("responses")["response_id"].tolist()
    store.append([Score(response_id=r, detector=HOSTILE, value=float(rng.normal())) for r in ids])
    evaluate(store, EvaluationConfig(bootstrap=Bootstrap(n_resamples=20), calibration="isotonic"))
    data = load(store)
    figures = selective_figures(data, "alpha", "human", [HOSTILE])
    assert [f.stem for f in figures] == ["rejection_alpha", "reliability_alpha"]
    assert all(f.png.startswith(b"\x89PNG") for f in figures)
    assert "isotonic regression" in figures[1].caption
    html = write_report(store, tmp_path / "out").html.read_text(encoding="utf-8")
    assert "isotonic regression fitted on" in html
    assert "\u202e" not in html


def test_no_figures_without_two_classes(make_run, tmp_path):
    store = make_run(tmp_path / "run")
    data = load(store)
    assert selective_figures(data, "alpha", "no-such-labeler", ["noisy"]) == []


def test_a_dataset_with_no_test_split_gets_its_rejection_curve_and_no_reliability(run, monkeypatch):
    # Few examples can all fall in the calibration split (the split hashes their ids).
    import realitycheck.report._calibration as module

    monkeypatch.setattr(module, "split_of", lambda ids, fraction: np.full(len(ids), "calibration"))
    figures = selective_figures(load(run), "alpha", "human", ["noisy"])
    assert [f.stem for f in figures] == ["rejection_alpha"]
