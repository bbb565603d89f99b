"""Platt scaling runs SciPy's own BLAS on one thread: the same probabilities, counts restored."""

import numpy as np
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_info

from realitycheck.analysis import _calibrate, calibrate


def _direct_platt(y, s, apply):
    """Platt's smoothed targets as weights of a positive and a negative copy, fitted by sklearn."""
    n_pos, n_neg = y.sum(), y.size - y.sum()
    target = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    centre, scale = s.mean(), s.std()
    x = ((s - centre) / scale)[:, None]
    model = LogisticRegression(C=1e6, tol=1e-10, max_iter=1000)
    both = np.r_[np.ones(y.size), np.zeros(y.size)]
    model.fit(np.vstack([x, x]), both, sample_weight=np.r_[target, 1 - target])
    return model.predict_proba(((apply - centre) / scale)[:, None])[:, 1]


def _counts():
    return sorted((i["filepath"], i["num_threads"]) for i in threadpool_info())


def test_platt_probabilities_equal_a_direct_fit_bit_for_bit_and_thread_counts_come_back(
    monkeypatch,
):
    rng = np.random.default_rng(3)
    y = (rng.random(3000) < 0.4).astype(float)
    s = y + rng.normal(size=3000)
    want = _direct_platt(y, s, s)  # loads SciPy's BLAS before the counts are read
    before = _counts()
    during = []
    fit = LogisticRegression.fit

    def spying_fit(self, *args, **kwargs):
        during.extend(i["num_threads"] for i in threadpool_info() if "scipy.libs" in i["filepath"])
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(LogisticRegression, "fit", spying_fit)
    got, note = calibrate(y, s, s, "platt")
    monkeypatch.undo()
    assert during and set(during) == {1}  # SciPy's own BLAS ran on one thread in the fit
    assert np.array_equal(got, want)
    assert "Platt scaling fitted on 3,000" in note
    assert _counts() == before


def test_only_the_blas_bundled_with_scipy_is_limited():
    _direct_platt(np.array([0.0, 1.0, 1.0]), np.array([0.1, 0.7, 0.4]), np.array([0.5]))
    own = _calibrate._scipy_own_blas().info()
    assert own  # SciPy's wheel bundles its own OpenBLAS: an empty selection limits nothing
    assert all("scipy.libs" in lib["filepath"] for lib in own)
    assert not any("numpy" in lib["filepath"] for lib in own)
