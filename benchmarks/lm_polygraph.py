"""realitycheck vs LM-Polygraph 0.7.0: the same four uncertainty estimators, end to end.

Both tools run the same tiny local Llama (random weights, built by
``benchmarks/_tiny_llama.py`` and loaded with ``attn_implementation="eager"``)
on CPU with the same number of threads, on the same prompts (the first
``--questions`` NQ-Open dev questions in a zero-shot QA prompt), with the same
``max_new_tokens``, one greedy answer and ``--samples`` samples drawn from the
model's full distribution (temperature 1, no top-k/top-p) per question, and
compute the same four estimators:

=====================  ===============================  =================================
estimator              realitycheck                     LM-Polygraph
=====================  ===============================  =================================
perplexity             ``perplexity`` (exp of mean NLL  ``Perplexity`` (mean NLL; compared
                       of the greedy answer)            with the log of ours)
mean token entropy     ``mean_token_entropy``           ``MeanTokenEntropy``
EigenScore             ``eigenscore`` (last generated   ``EigenScore`` (sample embeddings
                       token, middle layer, alpha 1e-3) of the middle layer, alpha 1e-3)
semantic entropy       ``semantic_entropy`` discrete,   ``SemanticEntropy`` with
                       ``equivalence="nli"``            ``class_probability_estimation=
                                                        "frequency"``
=====================  ===============================  =================================

Semantic entropy uses the same equivalence function in both tools: the same
tiny local DeBERTa-v2 NLI classifier (two samples are equivalent when each
entails the other by the classifier's top label, samples compared with the
first member of each class in sampling order). LM-Polygraph's default NLI
model (``microsoft/deberta-large-mnli``) is replaced by that folder, the only
change to its defaults; its default ``SemanticEntropy`` (class probabilities
from summed sequence likelihoods, not normalised) has no counterpart in
realitycheck, so its ``frequency`` variant, which is exactly the discrete
entropy of the class sizes, is used.

LM-Polygraph draws from torch's global random stream, seeded (0) at the start
of its process so that a run is reproducible: some draws make its
``UEManager`` fail (``SemanticMatrixCalculator`` stacks per-question matrices
of different sizes when a question keeps fewer samples than the others in
its batch), and a seeded run fails or passes every time.

Before the timed runs, each tool runs once untimed on two questions (so that
both import from bytecode caches and read warm files, as an installed tool
does). Timed runs, each in a fresh process with ``--threads`` torch threads (default
1: a model this small gains nothing from more, and on a shared machine
several OpenMP threads can stall for seconds), in ``--repeats`` interleaved
rounds whose order alternates (``benchmarks/_results.py``: medians, the
ratio the median of the rounds' ratios, the load stated); "process" is the
wall and CPU time of the whole process (interpreter start and imports
included; CPU of every thread and of the children it waited for), "compute"
starts after the imports, so it includes loading the model:

* realitycheck: the ``hf`` backend through :func:`cached_generate` with a
  fresh, empty call cache (nothing is served from a cache), best answer
  (greedy, with log-probabilities and entropies, batched ``--batch-size``
  prompts per call) and samples (one request of ``--samples`` samples per
  question with hidden features of the middle layer, carrying a per-prompt
  seed as the generation stage sends them, batched ``--batch-size`` prompts
  per call, each sample drawn from its own seeded stream; ``--unseeded``
  sends them without a seed, to ``model.generate``), then the four
  detectors;
* LM-Polygraph ``estimate_uncertainty``: its documented one-call API, called
  for each question and each estimator; every call generates afresh (the
  greedy answer in each of the four calls, the samples in two), and the
  semantic-entropy call loads the NLI model again;
* LM-Polygraph ``UEManager``: all four estimators in one pass over the data
  set in batches of ``--batch-size``, sharing the statistics: its fastest
  path. Its defaults also collect attention maps of the greedy answer.

Agreement, "where definitions match":

* greedy answers: the same tokens in both tools. LM-Polygraph forces at least
  two new tokens (its EOS mask, replaced by the row minimum, changes the
  distributions of the first two steps) and also scores the EOS token that
  ends an answer; realitycheck does neither. So per-token log-probabilities
  and entropies are compared from the third token on (float32 rounding
  apart, equal), as is a perplexity over those tokens, and the two
  estimators as each tool defines them (Spearman, largest difference);
* sampled answers differ by design (independent random draws; LM-Polygraph
  even draws the samples one ``generate`` call each), so EigenScore and
  semantic entropy are compared as distributions over the questions, and
  LM-Polygraph's own ``EigenScore`` and NLI clustering + ``SemanticEntropy``
  are run on realitycheck's samples (the same inputs), value for value. One
  definition differs there and is not exercised by that check: for a
  sample that stops at ``max_new_tokens`` (no EOS), LM-Polygraph's
  "last token" embedding is the hidden state of the last token fed to the
  model, i.e. the one before the last generated token; realitycheck's is
  that of the last generated token. Both use the last token before EOS when
  there is one, except that in a ``UEManager`` batch LM-Polygraph takes the
  state of a padding position for a sample that ended before the longest
  one of its batch.

Run from the repository root (LM-Polygraph lives in its own virtual
environment, ``benchmarks/.venv-polygraph``; see ``--help``)::

    python3 -m venv benchmarks/.venv-polygraph
    benchmarks/.venv-polygraph/bin/pip install -c constraints.txt lm-polygraph==0.7.0
    .venv/bin/python benchmarks/lm_polygraph.py --questions 200 --samples 10

The data folder is ``$REALITYCHECK_DATA_DIR`` or ``../shared/data``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
POLYGRAPH_PYTHON = REPO / "benchmarks" / ".venv-polygraph" / "bin" / "python"
PROMPT = "Answer the question as briefly as possible.\nQuestion: {question}\nAnswer:"

# The LM-Polygraph side, run with its own interpreter: python DRIVER CONFIG.json
DRIVER = r'''
import json, sys, time
import numpy as np

cfg = json.load(open(sys.argv[1]))
import torch
torch.set_num_threads(cfg["threads"])
torch.manual_seed(cfg.get("polygraph_seed", 0))  # reproducible draws (see the docstring)
from transformers import AutoModelForCausalLM, AutoTokenizer
import lm_polygraph.utils.estimate_uncertainty  # noqa: F401 - the package shadows the name
from lm_polygraph.defaults.register_default_stat_calculators import (
    register_default_stat_calculators,
)
from lm_polygraph.estimators import EigenScore, MeanTokenEntropy, Perplexity, SemanticEntropy
from lm_polygraph.utils.builder_enviroment_stat_calculator import (
    BuilderEnvironmentStatCalculator,
)
from lm_polygraph.utils.dataset import Dataset
from lm_polygraph.utils.generation_parameters import GenerationParameters
from lm_polygraph.utils.manager import UEManager
from lm_polygraph.utils.model import WhiteboxModel

def calculators(model_type, **kwargs):
    """The default stat calculators, with the local NLI model instead of deberta-large-mnli."""
    found = register_default_stat_calculators(model_type, **kwargs)
    for container in found:
        if "nli_model" in container.cfg:
            container.cfg.nli_model.deberta_path = cfg["nli"]
    return found

eu = sys.modules["lm_polygraph.utils.estimate_uncertainty"]
eu.register_default_stat_calculators = calculators

def estimators():
    return {
        "perplexity": Perplexity(),
        "mean_token_entropy": MeanTokenEntropy(),
        "eigenscore": EigenScore(),
        "semantic_entropy": SemanticEntropy(class_probability_estimation="frequency"),
    }

def floats(rows):
    return [[float(v) for v in row] for row in rows]

out = {}
start = time.perf_counter()
prompts = cfg["prompts"]
if cfg["mode"] == "formula":
    from lm_polygraph.defaults.stat_calculator_builders.utils import load_nli_model
    from lm_polygraph.stat_calculators import SemanticClassesCalculator, SemanticMatrixCalculator

    theirs = json.load(open(cfg["rc_out"]))
    es = EigenScore()
    out["eigenscore"] = [  # samples without a token have no embedding: left out, as here
        float(es({"sample_embeddings": [np.asarray([v for v in e if v], dtype=np.float64)]})[0])
        for e in theirs["sample_embeddings"]
    ]
    matrix = SemanticMatrixCalculator(load_nli_model(deberta_path=cfg["nli"]))
    se = SemanticEntropy(class_probability_estimation="frequency")
    values = []
    for prompt, texts in zip(prompts, theirs["sample_texts"]):
        stats = {"sample_texts": [texts]}
        stats.update(matrix(stats, [prompt], None))
        stats.update(SemanticClassesCalculator()(stats, [prompt], None))
        values.append(float(se(stats)[0]))
    out["semantic_entropy"] = values
    print(json.dumps(out))
    sys.exit(0)

tokenizer = AutoTokenizer.from_pretrained(cfg["llama"], padding_side="left")
lm = AutoModelForCausalLM.from_pretrained(cfg["llama"], attn_implementation="eager").eval()
params = GenerationParameters(
    temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=cfg["max_new_tokens"]
)
model = WhiteboxModel(lm, tokenizer, cfg["llama"], "CausalLM", params)
if cfg["samples"] != 10:
    # The default stat calculators are built without arguments: change the default.
    from lm_polygraph.stat_calculators import SamplingGenerationCalculator

    SamplingGenerationCalculator.__init__.__defaults__ = (cfg["samples"],)

if cfg["mode"] == "estimate_uncertainty":
    values = {name: [] for name in estimators()}
    tokens = []
    for prompt in prompts:
        for name, estimator in estimators().items():
            result = eu.estimate_uncertainty(model, estimator, prompt)
            values[name].append(float(result.uncertainty))
            if name == "perplexity":
                tokens.append([tokenizer.decode([t]) for t in result.generation_tokens])
    out["values"] = values
    out["greedy_tokens"] = tokens
else:
    manager = UEManager(
        Dataset(prompts, [""] * len(prompts), batch_size=cfg["batch_size"]),
        model,
        list(estimators().values()),
        builder_env_stat_calc=BuilderEnvironmentStatCalculator(model),
        available_stat_calculators=calculators("Whitebox"),
        generation_metrics=[],
        ue_metrics=[],
        processors=[],
        ignore_exceptions=False,
        verbose=False,
        max_new_tokens=cfg["max_new_tokens"],
        save_stats=["greedy_log_likelihoods", "entropy", "sample_texts"],
    )
    manager()
    names = {str(e): name for name, e in estimators().items()}
    out["values"] = {
        names[key]: [float(v) for v in manager.estimations["sequence", key]]
        for key in names
    }
    eos = tokenizer.eos_token_id
    out["greedy_tokens"] = [
        [tokenizer.decode([t]) for t in row if t != eos] for row in manager.stats["greedy_tokens"]
    ]
    out["greedy_eos"] = [bool(row) and row[-1] == eos for row in manager.stats["greedy_tokens"]]
    out["greedy_logprobs"] = floats(manager.stats["greedy_log_likelihoods"])
    out["greedy_entropies"] = floats(manager.stats["entropy"])
out["compute_s"] = time.perf_counter() - start
print(json.dumps(out))
'''


def data_dir() -> Path:
    env = os.environ.get("REALITYCHECK_DATA_DIR")
    if env:
        return Path(env)
    return REPO.parent / "shared" / "data"


def load_prompts(n: int) -> list[str]:
    prompts: list[str] = []
    with open(data_dir() / "nq_open" / "NQ-open.dev.jsonl", encoding="utf-8") as f:
        for line in f:
            if len(prompts) == n:
                break
            prompts.append(PROMPT.format(question=json.loads(line)["question"]))
    return prompts


def realitycheck_worker(cfg: dict[str, Any]) -> dict[str, Any]:
    """Generate and score with realitycheck; return values, features to compare and timings."""
    import torch

    torch.set_num_threads(cfg["threads"])
    from realitycheck.backends import GenerationRequest
    from realitycheck.backends._cache import CallCache, cached_generate
    from realitycheck.backends.hf import HFBackend
    from realitycheck.detectors import Needs
    from realitycheck.detectors.internal import EigenScore
    from realitycheck.detectors.semantic_entropy import SemanticEntropy
    from realitycheck.detectors.uncertainty import MeanTokenEntropy, Perplexity
    from realitycheck.generation._plans import prompt_seed
    from realitycheck.records import Response

    start = time.perf_counter()
    config = json.loads((Path(cfg["llama"]) / "config.json").read_text(encoding="utf-8"))
    layer = int(config["num_hidden_layers"]) // 2
    backend = HFBackend(
        model=cfg["llama"], device="cpu", batch_size=cfg["batch_size"], attn_implementation="eager"
    )
    common = {"max_tokens": cfg["max_new_tokens"]}
    best = [
        GenerationRequest(prompt=p, decoding="greedy", logprobs=True, **common)
        for p in cfg["prompts"]
    ]
    samples = [
        GenerationRequest(
            prompt=p,
            n=cfg["samples"],
            decoding="sampling",
            temperature=1.0,
            seed=None if cfg["sample_seed"] is None else prompt_seed(cfg["sample_seed"], p),
            hidden_layers=(layer,),
            **common,
        )
        for p in cfg["prompts"]
    ]
    with tempfile.TemporaryDirectory() as tmp:
        cache = CallCache(Path(tmp) / "calls.sqlite")
        answers = cached_generate(backend, best + samples, cache=cache)
    generated = time.perf_counter()
    errors = [g.error for g in answers if g.error]
    if errors:
        raise SystemExit(f"realitycheck: {len(errors)} failed calls, e.g. {errors[0]}")
    n = len(cfg["prompts"])
    responses = []
    for i, (b, s) in enumerate(zip(answers[:n], answers[n:], strict=True)):
        features = {
            "best": {
                "tokens": list(b.tokens[0]),
                "token_logprobs": list(b.token_logprobs[0]),
                "token_entropies": list(b.token_entropies[0]),
            },
            "samples": [
                {"tokens": list(t), "hidden": {k: list(v) for k, v in h.items()}}
                for t, h in zip(s.tokens, s.hidden, strict=True)
            ],
        }
        responses.append(
            Response(
                response_id=f"q{i}",
                example_id=f"q{i}",
                model=cfg["llama"],
                text=b.texts[0],
                decoding="greedy",
                samples=s.texts,
                features=features,
            )
        )
    detectors = {
        "perplexity": Perplexity(),
        "mean_token_entropy": MeanTokenEntropy(),
        "eigenscore": EigenScore(layer=layer),
        "semantic_entropy": SemanticEntropy(
            equivalence="nli", judge=HFBackend(model=cfg["nli"], device="cpu", batch_size=32)
        ),
    }
    values = {name: [s.value for s in d.score(responses, Needs())] for name, d in detectors.items()}
    end = time.perf_counter()
    return {
        "values": values,
        "compute_s": end - start,
        "generate_s": generated - start,
        "greedy_tokens": [list(r.features["best"]["tokens"]) for r in responses],
        "greedy_logprobs": [r.features["best"]["token_logprobs"] for r in responses],
        "greedy_entropies": [r.features["best"]["token_entropies"] for r in responses],
        "sample_texts": [list(r.samples) for r in responses],
        "sample_embeddings": [
            [seq["hidden"][f"last@L{layer}"] for seq in r.features["samples"]] for r in responses
        ],
    }


def run_worker(command: list[str], cfg: dict[str, Any], folder: Path, name: str) -> dict[str, Any]:
    """Run one timed worker process; return its JSON output with ``process_s`` added."""
    config = folder / f"{name}.json"
    config.write_text(json.dumps(cfg), encoding="utf-8")
    env = dict(os.environ)
    threads = str(cfg["threads"])
    # Both tools import from bytecode caches, as installed packages do (pip
    # compiles LM-Polygraph's at install; ours are written by the warm-up).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        CUDA_VISIBLE_DEVICES="",
        OMP_NUM_THREADS=threads,
        MKL_NUM_THREADS=threads,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONWARNINGS="ignore",
    )
    log = folder / f"{name}.log"
    cpu = _children_cpu()
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as err:
        done = subprocess.run(
            [*command, str(config)], stdout=subprocess.PIPE, stderr=err, text=True, env=env
        )
    elapsed = time.perf_counter() - start
    cpu = _children_cpu() - cpu  # the worker and every process it waited for
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8")[-3000:]
        raise SystemExit(f"The {name} run failed (exit {done.returncode}):\n{tail}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = elapsed
    result["process_cpu"] = cpu
    return result


def _children_cpu() -> float:
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def spearman(a: list[float], b: list[float]) -> float:
    from scipy.stats import spearmanr

    with warnings.catch_warnings():  # constant input (tiny runs) gives nan, no warning
        warnings.simplefilter("ignore")
        return float(spearmanr(a, b).statistic)


def agreement(
    ours: Sequence[float | None], theirs: Sequence[float], label: str, tol: float = 1e-9
) -> str:
    """One line: how closely two tools' values for the same questions agree."""
    pairs = [
        (x, y) for x, y in zip(ours, theirs, strict=True) if x is not None and math.isfinite(y)
    ]
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    diff = np.abs(a - b)
    return (
        f"  {label:<36} n={len(pairs):>4}  Spearman {spearman(list(a), list(b)):.4f}  "
        f"max |diff| {diff.max():.1e}  mean |diff| {diff.mean():.1e}  "
        f"within {tol:g}: {int(np.sum(diff <= tol))}"
    )


def greedy_report(rc: dict[str, Any], pg: dict[str, Any], name: str) -> None:
    """Compare the greedy answers and what each tool measured on them."""
    n = len(rc["greedy_tokens"])
    ours, theirs = rc["greedy_tokens"], pg["greedy_tokens"]
    print(f"greedy answers, realitycheck vs LM-Polygraph {name}:")
    if "greedy_logprobs" in pg:
        same = [ours[i] == theirs[i] for i in range(n)]
        print(f"  identical token sequences: {sum(same)}/{n}")
    else:
        # UncertaintyOutput.generation_tokens drops the last token, EOS or not.
        same = [
            len(theirs[i]) in (len(ours[i]), len(ours[i]) - 1)
            and ours[i][: len(theirs[i])] == theirs[i]
            for i in range(n)
        ]
        print(
            f"  identical token sequences: {sum(same)}/{n} (estimate_uncertainty returns them "
            "without the last token, also when it is not EOS)"
        )
    ppl = [math.log(v) if v is not None else None for v in rc["values"]["perplexity"]]
    print(agreement(ppl, pg["values"]["perplexity"], "log perplexity (as each defines it)"))
    print(
        agreement(
            rc["values"]["mean_token_entropy"],
            pg["values"]["mean_token_entropy"],
            "mean token entropy (as each defines)",
        )
    )
    if "greedy_logprobs" not in pg:
        return
    lp_diff: list[float] = []
    ent_diff: list[float] = []
    head_lp: list[float] = []
    head_ent: list[float] = []
    for i in range(n):
        if not same[i]:
            continue
        for j, _ in enumerate(rc["greedy_tokens"][i]):
            d_lp = abs(rc["greedy_logprobs"][i][j] - pg["greedy_logprobs"][i][j])
            d_ent = abs(rc["greedy_entropies"][i][j] - pg["greedy_entropies"][i][j])
            (lp_diff if j >= 2 else head_lp).append(d_lp)
            (ent_diff if j >= 2 else head_ent).append(d_ent)
    if lp_diff:
        print(
            f"  tokens 3+ ({len(lp_diff)} tokens): max |diff| log-prob {max(lp_diff):.2e}, "
            f"entropy {max(ent_diff):.2e}  (definitions match)"
        )
    if head_lp:
        print(
            f"  tokens 1-2 ({len(head_lp)} tokens): max |diff| log-prob {max(head_lp):.2e}, "
            f"entropy {max(head_ent):.2e}  (LM-Polygraph masks EOS there: min_new_tokens=2)"
        )
    eos = sum(pg["greedy_eos"])
    print(f"  greedy answers ending in EOS (LM-Polygraph scores that token too): {eos}/{n}")
    # Our formulas on the tokens where the definitions match.
    tail_ppl_rc = [float(-np.mean(rc["greedy_logprobs"][i][2:])) for i in range(n) if same[i]]
    tail_ppl_pg = [
        float(-np.mean(pg["greedy_logprobs"][i][2 : len(rc["greedy_tokens"][i])]))
        for i in range(n)
        if same[i]
    ]
    if tail_ppl_rc:
        print(agreement(tail_ppl_rc, tail_ppl_pg, "log perplexity over tokens 3+", tol=1e-5))


def sampled_report(rc: dict[str, Any], runs: dict[str, dict[str, Any]]) -> None:
    print("sampled estimators (independent draws in each tool): mean (sd) over questions")
    print("  (means of random draws: they move from run to run)")
    for name in ("eigenscore", "semantic_entropy"):
        cells = []
        for label, result in [("realitycheck", rc), *(("LM-P " + k, v) for k, v in runs.items())]:
            v = np.array([x for x in result["values"][name] if x is not None], dtype=float)
            cells.append(f"{label} {v.mean():.4f} ({v.std():.4f})")
        print(f"  {name:<18} " + "   ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per batch, both tools")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads, both tools (1: a tiny model gains nothing from more)",
    )
    parser.add_argument(
        "--polygraph",
        nargs="+",
        default=["estimate_uncertainty", "manager"],
        choices=["estimate_uncertainty", "manager"],
        help="which LM-Polygraph entry points to time",
    )
    parser.add_argument(
        "--unseeded",
        action="store_true",
        help="send realitycheck's sample requests without a seed (model.generate and torch's "
        "global random stream); by default each prompt carries its own seed, as the "
        "generation stage sends them",
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="timed runs of each tool, interleaved"
    )
    parser.add_argument(
        "--write", action="store_true", help="write benchmarks/results/lm_polygraph.json"
    )
    parser.add_argument("--polygraph-python", type=Path, default=POLYGRAPH_PYTHON)
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "realitycheck-bench-models",
        help="where the tiny models are built (and reused)",
    )
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        cfg = json.loads(args.worker.read_text(encoding="utf-8"))
        print(json.dumps(realitycheck_worker(cfg)))
        return
    if not args.polygraph_python.exists():
        raise SystemExit(
            f"No LM-Polygraph interpreter at {args.polygraph_python}. Create its environment:\n"
            "  python3 -m venv benchmarks/.venv-polygraph\n"
            "  benchmarks/.venv-polygraph/bin/pip install -c constraints.txt lm-polygraph==0.7.0"
        )
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _tiny_llama import build_models

    prompts = load_prompts(args.questions)
    llama, nli = build_models(args.model_dir, prompts)
    cfg = {
        "prompts": prompts,
        "llama": str(llama),
        "nli": str(nli),
        "samples": args.samples,
        "max_new_tokens": args.max_new_tokens,
        "batch_size": args.batch_size,
        "threads": args.threads,
        "sample_seed": None if args.unseeded else 1,
    }
    print(
        f"{len(prompts)} questions x {args.samples} samples, max_new_tokens={args.max_new_tokens}, "
        f"batch {args.batch_size}, {args.threads} CPU threads, tiny Llama at {llama}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        driver = folder / "polygraph_driver.py"
        driver.write_text(DRIVER, encoding="utf-8")
        modes = args.polygraph
        warm = {**cfg, "prompts": prompts[:2], "samples": 2}
        run_worker([sys.executable, __file__, "--worker"], warm, folder, "warm-up")
        for mode in args.polygraph:
            polygraph = [str(args.polygraph_python), str(driver)]
            run_worker(polygraph, {**warm, "mode": mode}, folder, "warm-up")
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _results import Timing, interleave

        polygraph = [str(args.polygraph_python), str(driver)]
        commands = {"realitycheck": ([sys.executable, __file__, "--worker"], cfg)}
        commands |= {mode: (polygraph, {**cfg, "mode": mode}) for mode in modes}
        outputs: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}

        def side(name: str) -> Any:
            def run() -> Timing:
                command, config = commands[name]
                result = run_worker(command, config, folder, name)
                outputs[name].append(result)
                return Timing(result["process_s"], result["process_cpu"])

            return run

        # interleaved (the order alternates), so that both see the same load
        timed = interleave({name: side(name) for name in commands}, args.repeats, warmup=0)
        rcs = outputs["realitycheck"]
        repeats = [{mode: outputs[mode][k] for mode in modes} for k in range(args.repeats)]
        rc, runs = rcs[0], repeats[0]
        (folder / "rc_out.json").write_text(json.dumps(rc), encoding="utf-8")
        formula = run_worker(
            [str(args.polygraph_python), str(driver)],
            {**cfg, "mode": "formula", "rc_out": str(folder / "rc_out.json")},
            folder,
            "formula",
        )
    print("\nwall time (s)                        process  compute   LM-Polygraph / realitycheck")
    for ours, theirs in zip(rcs, repeats, strict=True):
        print(f"  realitycheck{'':24}{ours['process_s']:7.1f}  {ours['compute_s']:7.1f}")
        for mode, result in theirs.items():
            print(
                f"  LM-Polygraph {mode:<22} {result['process_s']:7.1f}  {result['compute_s']:7.1f}"
                f"   {result['process_s'] / ours['process_s']:5.2f}x (process)  "
                f"{result['compute_s'] / ours['compute_s']:5.2f}x (compute)"
            )
        print(f"  (of realitycheck's compute, generation: {ours['generate_s']:.1f} s)")
    print()
    for mode, result in runs.items():
        greedy_report(rc, result, mode)
        print()
    sampled_report(rc, runs)
    print("LM-Polygraph's estimators (and NLI clustering) on realitycheck's samples:")
    for name in ("eigenscore", "semantic_entropy"):
        print(agreement(rc["values"][name], formula[name], name))
    if args.write:
        write_rows(args, timed, rcs, repeats, formula)


def _median(values: list[float]) -> float:
    return float(np.median(values))


def write_rows(
    args: argparse.Namespace,
    timed: Any,
    rcs: list[dict[str, Any]],
    repeats: list[dict[str, dict[str, Any]]],
    formula: dict[str, Any],
) -> None:
    """Write ``benchmarks/results/lm_polygraph.json``: medians over the rounds, and agreement."""
    from _results import write_result

    rows = []
    for mode in args.polygraph:
        theirs = [rep[mode] for rep in repeats]
        compute = [t["compute_s"] / r["compute_s"] for t, r in zip(theirs, rcs, strict=True)]
        rows.append(
            {
                "work": f"tiny Llama, {args.questions} NQ-Open questions x {args.samples} samples: "
                "perplexity, mean token entropy, EigenScore, semantic entropy (same NLI "
                "equivalence), whole process",
                "realitycheck": timed.seconds_text("realitycheck", 1),
                "alternative": f"LM-Polygraph 0.7.0 {mode} {timed.seconds_text(mode, 1)}",
                "ratio": timed.ratio_text(mode, "realitycheck"),
                "note": f"{timed.note(mode, 'realitycheck')}; compute only (after imports) "
                f"{_median(compute):.2f}x; realitycheck generation "
                f"{_median([r['generate_s'] for r in rcs]):.1f} s of its "
                f"{_median([r['compute_s'] for r in rcs]):.1f} s compute; "
                f"{args.threads} torch thread(s), batch {args.batch_size}",
            }
        )
    pg = repeats[0].get("manager")  # per-token values: the manager's only
    rows.append(agreement_row(rcs[0], pg, formula))
    flags = f" --questions {args.questions} --samples {args.samples} --repeats {args.repeats}"
    flags += " --polygraph " + " ".join(args.polygraph)
    write_result("lm_polygraph", rows, "python benchmarks/lm_polygraph.py" + flags + " --write")


def agreement_row(
    rc: dict[str, Any], pg: dict[str, Any] | None, formula: dict[str, Any]
) -> dict[str, str]:
    """The agreement row: greedy tokens, log-probs from token 3 on, estimators on our samples."""
    from _results import compare_exact, compare_values, report

    n = len(rc["greedy_tokens"])
    greedy = ""
    if pg is not None:
        same = [i for i in range(n) if rc["greedy_tokens"][i] == pg["greedy_tokens"][i]]
        ours = [a for i in same for a in rc["greedy_logprobs"][i][2:]]
        theirs = [
            b for i in same for b in pg["greedy_logprobs"][i][2 : len(rc["greedy_tokens"][i])]
        ]
        greedy = report(
            compare_exact(rc["greedy_tokens"], pg["greedy_tokens"], what="greedy answers"),
            compare_values(ours, theirs, tol=1e-5, what="token log-probs (tokens 3+)"),
        )
    cells = []
    for name in ("eigenscore", "semantic_entropy"):
        kept = [k for k, v in enumerate(rc["values"][name]) if v is not None]
        agreement = compare_values(
            [rc["values"][name][k] for k in kept],
            [formula[name][k] for k in kept],
            tol=1e-9,
            what=f"{name} values",
        )
        cells.append(report(agreement) + f" ({n - len(kept)} questions without a value in ours)")
    return {
        "work": "agreement where definitions match (same run)",
        "realitycheck": greedy,
        "alternative": "LM-Polygraph's EigenScore / semantic entropy on realitycheck's samples",
        "ratio": "",
        "note": "; ".join(cells),
    }


if __name__ == "__main__":
    main()
