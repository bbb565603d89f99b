"""PRR and ECE: realitycheck vs LM-Polygraph 0.7.0's own code, values and bootstrap speed.

LM-Polygraph's ``PredictionRejectionArea`` and ``ECE`` (``lm_polygraph/ue_metrics``)
run in their own interpreter (``benchmarks/.venv-polygraph``); only those two
numpy modules are loaded (the package ``__init__`` would import torch), so the
environment needs nothing but numpy and the package files::

    python3 -m venv benchmarks/.venv-polygraph
    benchmarks/.venv-polygraph/bin/pip install numpy
    benchmarks/.venv-polygraph/bin/pip install --no-deps lm-polygraph==0.7.0
    PYTHONPATH=src .venv/bin/python benchmarks/calibration_metrics.py [--quick]

Data (seeded): ``--detectors`` detectors x ``--items`` responses, y ~ Bernoulli(0.3),
scores = y + Gaussian noise of varied strength (continuous: no ties, where
LM-Polygraph's ``np.argsort`` tie-break and realitycheck's expectation over
orders coincide); probabilities for ECE drawn near the labels.

1. Values. PRR as LM-Polygraph's benchmark normalises it: the area of the
   detector, of the oracle (``metric(-target, target)``) and of random orders
   (``get_random_scores``: 1,000 shuffles, seed 42), with quality = 1 - y.
   realitycheck uses the exact expectation of the random area (the mean
   quality), so the two differ by the shuffles' Monte-Carlo error; the same
   normalisation with the exact random area must agree to rounding. ECE:
   LM-Polygraph's confidence is ``-estimator`` compared with the quality;
   passing ``estimator = p - 1`` (confidence 1 - p) gives realitycheck's ECE of
   p against y with 10 bins (bins equal for values off the edges).
2. Speed. ``bootstrap_ci("prr", ...)`` (vectorised, all detectors at once)
   against a loop over the same resamples calling LM-Polygraph's area for each
   detector and once for the oracle (random = mean quality, its cheapest
   form). CPU time of the process (``time.process_time``), both single-threaded:
   the machine is shared, so wall time says more about the neighbours.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

from realitycheck.metrics import bootstrap_ci, ece, prr, resample_indices

REPO = Path(__file__).resolve().parent.parent
POLYGRAPH_PYTHON = REPO / "benchmarks" / ".venv-polygraph" / "bin" / "python"

# Runs in LM-Polygraph's interpreter: loads ue_metric.py, pred_rej_area.py and ece.py
# under stub parent packages, computes on the arrays in IN and writes OUT.
DRIVER = textwrap.dedent(
    """
    import importlib.util, json, sys, time, types
    from pathlib import Path
    import numpy as np

    spec = importlib.util.find_spec("lm_polygraph")
    folder = Path(spec.submodule_search_locations[0]) / "ue_metrics"
    for name, path in (("lm_polygraph", folder.parent), ("lm_polygraph.ue_metrics", folder)):
        module = types.ModuleType(name)
        module.__path__ = [str(path)]
        sys.modules[name] = module
    from lm_polygraph.ue_metrics.pred_rej_area import PredictionRejectionArea
    from lm_polygraph.ue_metrics.ue_metric import get_random_scores, normalize_metric
    # ece.py imports MinMaxScaler for an option left off here: a stub stands in.
    sys.modules["sklearn"] = types.ModuleType("sklearn")
    sys.modules["sklearn.preprocessing"] = types.SimpleNamespace(MinMaxScaler=None)
    from lm_polygraph.ue_metrics.ece import ECE

    data = np.load(sys.argv[1])
    y, scores, probs, resamples = data["y"], data["scores"], data["probs"], data["resamples"]
    pra = PredictionRejectionArea()
    quality = 1.0 - y
    shuffled, exact = [], []
    for s in scores:
        area, oracle = pra(s, quality), pra(-quality, quality)
        shuffled.append(normalize_metric(area, oracle, get_random_scores(pra, quality)))
        exact.append(normalize_metric(area, oracle, quality.mean()))
    eces = [ECE(n_bins=10)(p - 1.0, quality) for p in probs]
    start = time.process_time()
    boot = np.empty((scores.shape[0], resamples.shape[0]))
    for b, rows in enumerate(resamples):
        q = quality[rows]
        oracle = pra(-q, q)
        for k, s in enumerate(scores):
            boot[k, b] = normalize_metric(pra(s[rows], q), oracle, q.mean())
    loop = time.process_time() - start
    low, high = np.quantile(boot, (0.025, 0.975), axis=1)
    out = {"shuffled": shuffled, "exact": exact, "ece": eces, "loop_s": loop,
           "low": low.tolist(), "high": high.tolist()}
    Path(sys.argv[2]).write_text(json.dumps(out))
    """
)


def make_data(n_detectors: int, n_items: int, seed: int):
    rng = np.random.default_rng(seed)
    y = (rng.random(n_items) < 0.3).astype(np.int64)
    noise = np.linspace(0.5, 3.0, n_detectors)[:, None]
    scores = y + rng.normal(size=(n_detectors, n_items)) * noise
    probs = np.clip(0.2 + 0.5 * y + rng.normal(0, 0.2, (n_detectors, n_items)), 0, 1)
    return y, scores, probs


def run_polygraph(python: Path, arrays: dict[str, np.ndarray]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        np.savez(folder / "in.npz", **arrays)
        (folder / "driver.py").write_text(DRIVER)
        subprocess.run(
            [
                str(python),
                str(folder / "driver.py"),
                str(folder / "in.npz"),
                str(folder / "out.json"),
            ],
            check=True,
        )
        return json.loads((folder / "out.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 resamples instead of 1,000")
    parser.add_argument("--detectors", type=int, default=10)
    parser.add_argument("--items", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--polygraph-python", type=Path, default=POLYGRAPH_PYTHON)
    args = parser.parse_args()
    if not args.polygraph_python.exists():
        sys.exit(f"No LM-Polygraph interpreter at {args.polygraph_python}; see the docstring.")
    n_resamples = 100 if args.quick else 1000
    y, scores, probs = make_data(args.detectors, args.items, args.seed)
    resamples = np.concatenate(list(resample_indices(y.size, n_resamples, args.seed)))
    print(
        f"{args.detectors} detectors x {args.items:,} responses x {n_resamples:,} resamples "
        f"(prevalence {y.mean():.3f})"
    )
    theirs = run_polygraph(
        args.polygraph_python, {"y": y, "scores": scores, "probs": probs, "resamples": resamples}
    )
    ours_prr = np.array([prr(y, s) for s in scores])
    ours_ece = np.array([ece(y, p) for p in probs])
    print(
        f"PRR, LM-Polygraph (random by 1,000 shuffles) max |diff| : "
        f"{np.abs(ours_prr - theirs['shuffled']).max():.2e}"
    )
    print(
        f"PRR, LM-Polygraph (exact random area)      max |diff| : "
        f"{np.abs(ours_prr - theirs['exact']).max():.2e}"
    )
    print(
        f"ECE (10 bins)                              max |diff| : "
        f"{np.abs(ours_ece - theirs['ece']).max():.2e}"
    )

    start = time.process_time()
    result = bootstrap_ci("prr", y, scores, n_resamples=n_resamples, seed=args.seed)
    ours = time.process_time() - start
    print(f"realitycheck bootstrap_ci('prr'), CPU time : {ours:8.2f} s")
    print(f"loop over LM-Polygraph's area, CPU time    : {theirs['loop_s']:8.2f} s")
    print(f"speed-up                                   : {theirs['loop_s'] / ours:8.1f}x")
    gaps = np.r_[result.ci_low - theirs["low"], result.ci_high - theirs["high"]]
    print(f"max |CI bound difference|                  : {np.abs(gaps).max():.2e}")


if __name__ == "__main__":
    main()
