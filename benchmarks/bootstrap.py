"""Vectorised bootstrap AUROC intervals vs a plain loop over sklearn.metrics.roc_auc_score.

Data: 20 detectors x 10,000 responses (seeded; y ~ Bernoulli(0.3), scores = y +
Gaussian noise of varied strength, every other detector rounded to create ties).
Both sides use the same resample indices, so the intervals must agree to
rounding error. Run from the repository root:

    .venv/bin/python benchmarks/bootstrap.py            # 1,000 resamples
    .venv/bin/python benchmarks/bootstrap.py --quick    # 100 resamples

Needs scikit-learn (a dev dependency). A full run (not ``--quick``) writes
``benchmarks/results/bootstrap.json``; ``benchmarks/evaluate.py`` times the
whole ``evaluate`` command.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _results import ratio, write_result
from sklearn.metrics import roc_auc_score

from realitycheck.metrics import bootstrap_ci, resample_indices


def make_data(n_detectors: int, n_items: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y_true = (rng.random(n_items) < 0.3).astype(np.int64)
    noise = np.linspace(0.5, 3.0, n_detectors)[:, None]
    scores = y_true + rng.normal(size=(n_detectors, n_items)) * noise
    scores[::2] = np.round(scores[::2], 1)
    return y_true, scores


def sklearn_loop(
    y_true: np.ndarray, scores: np.ndarray, n_resamples: int, seed: int, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    indices = np.concatenate(list(resample_indices(y_true.size, n_resamples, seed)))
    values = np.empty((scores.shape[0], n_resamples))
    for b, rows in enumerate(indices):
        labels = y_true[rows]
        for k in range(scores.shape[0]):
            values[k, b] = roc_auc_score(labels, scores[k, rows])
    quantiles = ((1 - confidence) / 2, (1 + confidence) / 2)
    bounds = np.quantile(values, quantiles, axis=1)
    return bounds[0], bounds[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 resamples instead of 1,000")
    parser.add_argument("--detectors", type=int, default=20)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n_resamples = 100 if args.quick else 1000

    y_true, scores = make_data(args.detectors, args.items, args.seed)
    print(
        f"{args.detectors} detectors x {args.items:,} responses x {n_resamples:,} resamples "
        f"(prevalence {y_true.mean():.3f})"
    )

    start = time.perf_counter()
    result = bootstrap_ci("auroc", y_true, scores, n_resamples=n_resamples, seed=args.seed)
    ours = time.perf_counter() - start
    print(f"realitycheck bootstrap_ci : {ours:8.2f} s")

    start = time.perf_counter()
    low, high = sklearn_loop(y_true, scores, n_resamples, args.seed, result.confidence)
    loop = time.perf_counter() - start
    print(f"loop over roc_auc_score   : {loop:8.2f} s")

    print(f"speed-up                  : {loop / ours:8.1f}x")
    print(f"max |ci_low  difference|  : {np.abs(result.ci_low - low).max():.3e}")
    print(f"max |ci_high difference|  : {np.abs(result.ci_high - high).max():.3e}")
    diff = max(np.abs(result.ci_low - low).max(), np.abs(result.ci_high - high).max())
    if not args.quick:
        work = (
            f"bootstrap AUROC CIs, {args.detectors} detectors x {args.items:,} responses x "
            f"{n_resamples:,} resamples, in one process"
        )
        row = {
            "work": work,
            "realitycheck": f"{ours:.2f} s",
            "alternative": f"sklearn loop {loop:.2f} s",
            "ratio": ratio(loop, ours),
            "note": f"same resamples; CIs equal to {diff:.1e}",
        }
        write_result("bootstrap", [row], "python benchmarks/bootstrap.py")
    widest = np.argmax(result.ci_high - result.ci_low)
    print(
        f"example (detector {widest}): AUROC {result.value[widest]:.4f} "
        f"[{result.ci_low[widest]:.4f}, {result.ci_high[widest]:.4f}]"
    )


if __name__ == "__main__":
    main()
