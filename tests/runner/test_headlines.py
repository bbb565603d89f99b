"""The demo's headline on length: the report's paired interval of the difference, given the run."""

import numpy as np
import pytest

from realitycheck import EvaluationConfig, Example, Label, Response, RunStore, Score, evaluate
from realitycheck.analysis import Bootstrap
from realitycheck.metrics import paired_auroc_bootstrap
from realitycheck.runner._headlines import headline_findings

BOOT = Bootstrap(n_resamples=120, seed=7)


def _run(path, signal: dict[str, float], n: int = 60, seed: int = 0):
    """One dataset per entry: ``noisy`` carries ``signal`` of the label, ``length`` none."""
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    arrays = {}
    for ds, strength in signal.items():
        y = rng.integers(0, 2, n)
        noisy = strength * y + rng.normal(size=n)
        length = rng.normal(size=n)
        noisy[0] = np.nan  # one failed score: the pair is measured on the others
        arrays[ds] = (y, noisy, length)
        for i in range(n):
            eid, rid = f"{ds}/{i}", f"{ds}/{i}/m"
            examples.append(Example(example_id=eid, dataset=ds, task="qa", question="q?"))
            responses.append(Response(response_id=rid, example_id=eid, model="m", text="t"))
            labels.append(Label(response_id=rid, labeler="human", hallucinated=bool(y[i])))
            value = None if np.isnan(noisy[i]) else float(noisy[i])
            scores.append(Score(response_id=rid, detector="noisy", value=value))
            scores.append(Score(response_id=rid, detector="length", value=float(length[i])))
    for records in (examples, responses, labels, scores):
        store.append(records)
    return store, evaluate(store, EvaluationConfig(bootstrap=BOOT)), arrays


def _paired(y, a, b):
    keep = np.isfinite(a)
    return paired_auroc_bootstrap(y[keep], a[keep], b[keep], n_resamples=120, seed=7)


def test_the_difference_carries_the_reports_paired_interval(tmp_path):
    store, evaluation, arrays = _run(tmp_path, {"alpha": 2.0, "beta": 1.5})
    (best, *_) = headline_findings(evaluation, store)
    alpha, beta = (_paired(*arrays[ds]) for ds in ("alpha", "beta"))
    top = alpha if alpha.difference >= beta.difference else beta
    signed = f"{top.difference:+.3f} [{top.ci_low:+.3f}, {top.ci_high:+.3f}]"
    assert alpha.ci_low > 0 and beta.ci_low > 0
    assert best.startswith(
        "Best detector against the response-length baseline (AUROC against human labels, all "
        "responses; difference with a paired bootstrap interval): shown to beat it (the whole "
        "interval above 0) on 2 of 2 datasets, by most on "
    )
    assert best.endswith(f", difference {signed}.")


def test_a_higher_auroc_whose_paired_interval_holds_zero_does_not_beat_length(tmp_path):
    store, evaluation, arrays = _run(tmp_path, {"alpha": 0.5}, seed=5)
    found = _paired(*arrays["alpha"])
    assert found.difference > 0 and found.ci_low < 0 < found.ci_high  # the case under test
    (by_value, *_) = headline_findings(evaluation)
    assert "; it does not beat length" not in by_value and by_value.endswith("].")
    (paired, *_) = headline_findings(evaluation, store)
    assert paired.endswith(
        f", difference {found.difference:+.3f} [{found.ci_low:+.3f}, {found.ci_high:+.3f}]; it "
        "is not shown to beat length (the interval holds 0 or lies below it): it may only "
        "measure length."
    )


@pytest.mark.parametrize("given", [False, True])
def test_the_bootstrap_is_the_runs(tmp_path, given):
    store, evaluation, arrays = _run(tmp_path, {"alpha": 2.0})
    if not given:  # settings that are not valid: the defaults
        store.update_manifest(config={"evaluate": {"bootstrap": {"n_resamples": 0}}})
    (text, *_) = headline_findings(evaluation, store)
    y, a, b = arrays["alpha"]
    keep = np.isfinite(a)
    boot = BOOT if given else Bootstrap()
    found = paired_auroc_bootstrap(
        y[keep], a[keep], b[keep], n_resamples=boot.n_resamples, seed=boot.seed
    )
    assert f"difference {found.difference:+.3f} [{found.ci_low:+.3f}, {found.ci_high:+.3f}]" in (
        text
    )
