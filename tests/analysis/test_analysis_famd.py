"""Factor analysis of mixed data: against a hand computation (SVD) and prince itself."""

import math

import numpy as np
import pandas as pd
import pytest

from realitycheck.analysis import famd_scores, fit_famd


def _mixed(seed, n=120):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    return pd.DataFrame(
        {
            "recorded:a[x=1]": z + rng.normal(size=n),
            "b": np.exp(z + rng.normal(size=n)),
            "c": (z + rng.normal(size=n) > 0).astype(float),
            "d": (rng.random(n) < 0.3).astype(float),
        }
    )


def _famd_by_hand(frame, binary):
    """Standardise numeric columns; one-hot, centre and divide by sqrt(p) categories; SVD."""
    parts = []
    for c in frame.columns:
        x = frame[c].to_numpy()
        if c in binary:
            for value in (0.0, 1.0):
                indicator = (x == value).astype(float)
                p = indicator.mean()
                parts.append((indicator - p) / math.sqrt(p))
        else:
            parts.append((x - x.mean()) / x.std())
    z = np.column_stack(parts)
    u, s, vt = np.linalg.svd(z / math.sqrt(len(frame)), full_matrices=False)
    return s[0] ** 2, z @ vt[0], (s**2).sum()


@pytest.mark.parametrize("binary", [["c", "d"], [], ["c"]])
def test_famd_equals_a_hand_computation(binary):
    frame = _mixed(0)
    if not binary:
        frame = frame.drop(columns=["c", "d"])
    fit = fit_famd(frame, binary)
    eigenvalue, scores, total = _famd_by_hand(frame, binary)
    assert fit.eigenvalue == pytest.approx(eigenvalue)
    assert fit.inertia_share == pytest.approx(eigenvalue / total)
    got = famd_scores(fit, frame)
    np.testing.assert_allclose(np.abs(got), np.abs(scores), atol=1e-9)
    assert fit.contributions.sum() == pytest.approx(100)


def test_famd_matches_prince_on_the_fitted_rows():
    prince = pytest.importorskip("prince")
    frame = _mixed(1)
    fit = fit_famd(frame, ["c", "d"])
    table = frame[["recorded:a[x=1]", "b"]].join(frame[["c", "d"]].astype(int).astype(str))
    model = prince.FAMD(n_components=2, engine="scipy", categorical_columns=["c", "d"]).fit(table)
    np.testing.assert_allclose(famd_scores(fit, frame), model.row_coordinates(table)[0], atol=1e-10)
    np.testing.assert_allclose(
        fit.contributions / 100, model.variable_contributions_[0].loc[list(frame.columns)]
    )
    assert fit.engine == "prince.FAMD"


def test_famd_of_binary_signals_equals_pca_of_their_indicators():
    frame = _mixed(2)
    mixed = fit_famd(frame, ["c", "d"])
    as_numbers = fit_famd(frame, [])
    assert mixed.eigenvalue == pytest.approx(as_numbers.eigenvalue)
    np.testing.assert_allclose(
        np.abs(famd_scores(mixed, frame)), np.abs(famd_scores(as_numbers, frame)), atol=1e-9
    )


def test_famd_scores_an_item_the_same_alone_or_in_a_batch():
    frame = _mixed(3)
    fit = fit_famd(frame.iloc[:80], ["c", "d"])
    batch = famd_scores(fit, frame.iloc[80:])
    alone = [famd_scores(fit, frame.iloc[[i]])[0] for i in range(80, 120)]
    np.testing.assert_allclose(batch, alone)
