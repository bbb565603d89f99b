"""Vectorised bootstrap AUROC intervals vs a plain loop over sklearn.metrics.roc_auc_score.

Data: 20 detectors x 10,000 responses (seeded; y ~ Bernoulli(0.3), scores = y +
Gaussian noise of varied strength, every other detector rounded to create ties).
Both sides use the same resample indices, so the 40 interval bounds must
agree to 1e-12 (the note says how many do). The two sides run in the same
process in interleaved rounds (``--rounds``, default 3: ours, the loop, then
the loop, ours, ...), each after an untimed call on a small slice; the
figures are medians, wall and CPU seconds, and the ratio the median of the
rounds' ratios. Run from the repository root:

    .venv/bin/python benchmarks/bootstrap.py            # 1,000 resamples, 3 rounds
    .venv/bin/python benchmarks/bootstrap.py --quick    # 100 resamples, 1 round

Needs scikit-learn (a dev dependency). A full run (not ``--quick``) writes
``benchmarks/results/bootstrap.json``; ``benchmarks/evaluate.py`` times the
whole ``evaluate`` command.
"""

from __future__ import annotations

import argparse

import numpy as np
from _results import compare_values, in_process, interleave, report, write_result
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
    parser.add_argument("--quick", action="store_true", help="100 resamples, one round, no file")
    parser.add_argument("--detectors", type=int, default=20)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n_resamples = 100 if args.quick else 1000
    rounds = 1 if args.quick else args.rounds

    y_true, scores = make_data(args.detectors, args.items, args.seed)
    print(
        f"{args.detectors} detectors x {args.items:,} responses x {n_resamples:,} resamples "
        f"(prevalence {y_true.mean():.3f}), {rounds} interleaved rounds"
    )
    confidence = bootstrap_ci("auroc", y_true[:100], scores[:, :100], n_resamples=10).confidence
    sides = {  # the warm-up above imported and ran both code paths once
        "realitycheck": in_process(
            lambda: bootstrap_ci("auroc", y_true, scores, n_resamples=n_resamples, seed=args.seed)
        ),
        "sklearn": in_process(
            lambda: sklearn_loop(y_true, scores, n_resamples, args.seed, confidence)
        ),
    }
    sklearn_loop(y_true[:100], scores[:, :100], 2, args.seed, confidence)
    timed = interleave(sides, rounds, warmup=0)
    result, (low, high) = timed.values["realitycheck"], timed.values["sklearn"]
    print(f"realitycheck bootstrap_ci : {timed.seconds_text('realitycheck')}")
    print(f"loop over roc_auc_score   : {timed.seconds_text('sklearn')}")
    print(f"ratio                     : {timed.ratio_text('sklearn', 'realitycheck')}")
    bounds = [*result.ci_low, *result.ci_high]
    equal = report(compare_values(bounds, [*low, *high], tol=1e-12, what="CI bounds"))
    if not args.quick:
        work = (
            f"bootstrap AUROC CIs, {args.detectors} detectors x {args.items:,} responses x "
            f"{n_resamples:,} resamples, in one process"
        )
        row = {
            "work": work,
            "realitycheck": timed.seconds_text("realitycheck"),
            "alternative": f"sklearn loop {timed.seconds_text('sklearn')}",
            "ratio": timed.ratio_text("sklearn", "realitycheck"),
            "note": f"{timed.note('sklearn', 'realitycheck')}; same resamples; {equal}",
        }
        flags = "" if args.rounds == 3 else f" --rounds {args.rounds}"
        write_result("bootstrap", [row], f"python benchmarks/bootstrap.py{flags}")
    widest = np.argmax(result.ci_high - result.ci_low)
    print(
        f"example (detector {widest}): AUROC {result.value[widest]:.4f} "
        f"[{result.ci_low[widest]:.4f}, {result.ci_high[widest]:.4f}]"
    )


if __name__ == "__main__":
    main()
