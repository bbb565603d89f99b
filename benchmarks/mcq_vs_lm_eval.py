"""realitycheck vs lm-evaluation-harness: MCQ option scoring on the same tiny model and inputs.

Both tools score the same ``(context, continuation)`` pairs with the same
tiny local Llama (random weights, built by ``benchmarks/_tiny_llama.py``,
saved with ``save_pretrained``) on CPU with the same number of torch threads:
the first ``--questions`` questions of ``--dataset``, every option of every
question:

* ``truthfulqa``: TruthfulQA MC1 in the ``qa`` template (``Q: question\\nA:``,
  each option after a space), on the test fixture's Llama (hidden size 32,
  256 positions): short prompts, a model so small that per-call overhead
  dominates;
* ``factor``: News-FACTOR with its truncated prefixes (each prefix is the
  context, each of its four completions after a space), on a Llama with
  ``--hidden-size`` (default 256) and 2,048 positions, so that no prefix is
  truncated by either tool: long shared contexts, where running each context
  once (realitycheck) instead of once per option (lm-eval) is the saving.

* realitycheck: the ``hf`` backend's :meth:`loglik_tokens` with SDPA
  attention (transformers' default, which lm-eval loads too), all pairs in
  one call: each question's context and its options in one packed row
  (the context run once), about ``--batch-size`` options per forward pass,
  then :func:`choose_option` per question;
* lm-eval: ``HFLM(pretrained=FOLDER, add_bos_token=True)`` (the BOS token
  realitycheck's tokenisation also adds), ``loglikelihood`` on ``Instance``
  requests, at its default batch size (1) and at the same ``--batch-size``
  (both printed, each with its own ratio); its choices are ``acc``
  (argmax of the summed log-likelihood) and ``acc_norm`` (argmax of the sum
  divided by the option's length in characters).

Each tool runs in a fresh process (lm-eval in its own virtual environment,
which this script creates when missing: a venv beside the project's whose
``.pth`` file adds the project's site-packages, so both tools use the very
same torch and transformers, plus ``pip install lm-eval`` with the
project's constraints). Scoring is timed from the pairs (after the model
is loaded; loading is timed apart, and on a loaded shared machine it is
noisy and dominated by ``from_pretrained``) to the choices, tokenisation
included; each tool runs ``--rounds`` times, interleaved (realitycheck,
lm-eval at batch size 1, lm-eval at ``--batch-size``, then the other way
round, ...) after a warm-up round, so that a change in a shared machine's
load reaches every tool alike, and the median of each is kept
(``benchmarks/_results.py``; the ratio is the median of the rounds'
ratios, the load is stated). Each tool's process CPU time over the same
span is recorded too (both run single-threaded: one torch thread, no
tokenizer parallelism), a figure a busy shared machine disturbs less than
wall time. Checked: how many of the summed log-likelihoods differ by more
than 1e-3 (float32 sums of different batch shapes), and how many choices
differ, by the sum and per character.

Run from the repository root::

    .venv/bin/python benchmarks/mcq_vs_lm_eval.py --questions 200
    .venv/bin/python benchmarks/mcq_vs_lm_eval.py --dataset factor --questions 100

Each writes ``benchmarks/results/mcq_vs_lm_eval_<dataset>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
DEFAULT_VENV = REPO / "benchmarks" / ".venv-lmeval"
LM_EVAL = "lm-eval==0.4.13"

RC_SCRIPT = """
import json, sys, time
cfg = json.loads(open(sys.argv[1], encoding="utf-8").read())
import torch
torch.set_num_threads(cfg["threads"])
from realitycheck.backends.hf import HFBackend
from realitycheck.generation import OptionScore, choose_option
loading = time.perf_counter()
backend = HFBackend(model=cfg["model"], device="cpu", dtype="float32", batch_size=cfg["batch"],
                    attn_implementation="sdpa")
backend.loglik_tokens([])  # loads the model
start, cpu = time.perf_counter(), time.process_time()
pairs = [tuple(p) for p in cfg["pairs"]]
values = backend.loglik_tokens(pairs)
sums, choices = [sum(v) for v in values], {"sum": [], "char": []}
offset = 0
for n, lengths in zip(cfg["counts"], cfg["lengths"]):
    scores = [OptionScore(index=i, loglik=sum(values[offset + i]),
                          n_tokens=len(values[offset + i]), n_chars=lengths[i]) for i in range(n)]
    choices["sum"].append(choose_option(scores, "none"))
    choices["char"].append(choose_option(scores, "char"))
    offset += n
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
load = start - loading
print(json.dumps({"seconds": seconds, "cpu": cpu, "load": load, "sums": sums, "choices": choices}))
"""

LM_EVAL_SCRIPT = """
import json, sys, time
cfg = json.loads(open(sys.argv[1], encoding="utf-8").read())
import torch
torch.set_num_threads(cfg["threads"])
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM
loading = time.perf_counter()
lm = HFLM(pretrained=cfg["model"], device="cpu", dtype="float32", batch_size=cfg["batch"],
          add_bos_token=True)
start, cpu = time.perf_counter(), time.process_time()
requests = [Instance(request_type="loglikelihood", doc={}, arguments=tuple(p), idx=i)
            for i, p in enumerate(cfg["pairs"])]
results = lm.loglikelihood(requests, disable_tqdm=True)
sums = [float(r[0]) for r in results]
choices = {"sum": [], "char": []}
offset = 0
for n, lengths in zip(cfg["counts"], cfg["lengths"]):
    part = sums[offset : offset + n]
    choices["sum"].append(max(range(n), key=lambda i: (part[i], -i)))
    choices["char"].append(max(range(n), key=lambda i: (part[i] / lengths[i], -i)))
    offset += n
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
load = start - loading
print(json.dumps({"seconds": seconds, "cpu": cpu, "load": load, "sums": sums, "choices": choices}))
"""


def ensure_venv(venv: Path) -> Path:
    """Return the lm-eval venv's python, creating the venv when it is missing."""
    python = venv / "bin" / "python"
    if python.exists():
        return python
    import site
    import sysconfig

    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    ours = site.getsitepackages()[0] if site.getsitepackages() else sysconfig.get_paths()["purelib"]
    (purelib / "realitycheck_parent.pth").write_text(ours + "\n", encoding="utf-8")
    constraints = REPO / "constraints.txt"
    pip = [str(python), "-m", "pip", "install", "-q", LM_EVAL]
    if constraints.exists():
        pip += ["-c", str(constraints)]
    subprocess.run(pip, check=True)
    return python


def questions(dataset: str, data_dir: Path, n: int) -> list[tuple[str, list[str]]]:
    """Return ``(context, options)`` of the first ``n`` questions of ``dataset``."""
    from realitycheck.datasets import datasets

    if dataset == "factor":
        factor = datasets.create("factor", data_dir=str(data_dir), part="news", prefix="truncated")
        return [(e.question, list(e.choices)) for e in factor.load().examples[:n]]
    examples = datasets.create("truthfulqa_mc", data_dir=str(data_dir)).load().examples[:n]
    return [(f"Q: {e.question}\nA:", list(e.choices)) for e in examples]


def run_tool(python: str, script: str, cfg: dict, env: dict[str, str]) -> dict:
    """Run one tool in a fresh process and return what it printed."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(cfg, fh)
    out = subprocess.run(
        [python, "-c", script, fh.name],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    os.unlink(fh.name)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Build the model, run both tools, print agreement and the speed ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=("truthfulqa", "factor"), default="truthfulqa")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--hidden-size", type=int, default=256, help="the factor model's")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--models", type=Path, default=Path(tempfile.gettempdir()) / "rc-mcq")
    args = parser.parse_args()

    from _results import (
        SRC,
        Rounds,
        Timing,
        compare_exact,
        compare_values,
        interleave,
        report,
        write_result,
    )
    from _tiny_llama import build_llama

    items = questions(args.dataset, args.data_dir, args.questions)
    texts = [c + " " + " ".join(options) for c, options in items]
    size = {"hidden_size": args.hidden_size, "max_positions": 2048}
    size = size if args.dataset == "factor" else {}
    folder = args.models / "-".join([args.dataset, str(args.questions), *map(str, size.values())])
    if not (folder / "config.json").exists():
        build_llama(folder, texts, **size)
    pairs = [(c, " " + o) for c, options in items for o in options]
    cfg = {
        "model": str(folder),
        "batch": args.batch_size,
        "threads": args.threads,
        "pairs": pairs,
        "counts": [len(options) for _, options in items],
        "lengths": [[len(o) for o in options] for _, options in items],
    }
    lm_eval_python = ensure_venv(args.venv)
    env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"}
    env["TOKENIZERS_PARALLELISM"] = "false"
    batches = sorted({1, args.batch_size})  # lm-eval's default batch size, then ours

    def side(python: str, script: str, config: dict) -> Any:
        def run() -> tuple[Timing, dict]:
            out = run_tool(python, script, config, env)
            return Timing(out["seconds"], out["cpu"]), out

        return run

    sides = {"realitycheck": side(sys.executable, RC_SCRIPT, cfg)}
    for batch in batches:
        sides[f"lm-eval b{batch}"] = side(
            str(lm_eval_python), LM_EVAL_SCRIPT, {**cfg, "batch": batch}
        )
    timed: Rounds = interleave(sides, args.rounds)
    ours = timed.values["realitycheck"]
    name = {"factor": "News-FACTOR", "truthfulqa": "TruthfulQA MC1"}[args.dataset]
    print(
        f"{name}: {len(items)} questions, {len(pairs)} options scored, "
        f"{args.threads} torch thread(s), median of {args.rounds} interleaved rounds"
    )
    rate_ours = len(pairs) / timed.wall("realitycheck")
    print(f"realitycheck (batch size {args.batch_size}): {timed.seconds_text('realitycheck')}")
    rows = []
    for batch in batches:
        key = f"lm-eval b{batch}"
        theirs = timed.values[key]
        checked = report(
            compare_values(ours["sums"], theirs["sums"], tol=1e-3, what="summed log-likelihoods"),
            compare_exact(ours["choices"]["sum"], theirs["choices"]["sum"], what="choices by sum"),
            compare_exact(
                ours["choices"]["char"], theirs["choices"]["char"], what="choices per character"
            ),
        )
        print(
            f"lm-eval (batch size {batch}): {timed.seconds_text(key)}; "
            f"ratio {timed.ratio_text(key, 'realitycheck')}"
        )
        rows.append(
            {
                "work": f"{name}, {len(items)} questions, {len(pairs)} options by likelihood, "
                f"tiny Llama (hidden {args.hidden_size if size else 32}), "
                f"{args.threads} thread(s)",
                "realitycheck": f"{rate_ours:.0f} options/s, batch {args.batch_size}; "
                f"{timed.seconds_text('realitycheck')}",
                "alternative": f"lm-eval {len(pairs) / timed.wall(key):.0f} options/s, "
                f"batch {batch}; {timed.seconds_text(key)}",
                "ratio": timed.ratio_text(key, "realitycheck"),
                "note": f"scoring only (model loaded); {timed.note(key, 'realitycheck')}; "
                f"{checked}",
            }
        )
    flags = f" --dataset {args.dataset} --questions {args.questions}"
    flags += f" --rounds {args.rounds}" if args.rounds != parser.get_default("rounds") else ""
    command = f"python benchmarks/mcq_vs_lm_eval.py{flags}"
    write_result(f"mcq_vs_lm_eval_{args.dataset}", rows, command)


if __name__ == "__main__":
    main()
