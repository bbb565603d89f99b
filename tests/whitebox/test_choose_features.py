"""The choose stage keeps each model's features of its own MCQ answer, on tiny models.

Questions written in the tiny tokenizer's words (so no token is unknown) are
answered by likelihood; the chosen option's stored token log-probs,
entropies, alternatives and tokens are checked against a plain float64
transformers pass written here, and perplexity and token entropy score the
answers through `detect` and take part in the prompt-multiplicity study.
Two models (a Llama and a GPT-2) answer with and without BM25: the study
counts two models, each under two retrieval settings, not four models.
"""

from __future__ import annotations

import json
import math
import textwrap

import numpy as np
import pytest
from scipy import stats

from realitycheck.backends.hf import HFBackend
from realitycheck.cli import main
from realitycheck.records import Response, Score
from realitycheck.store import RunStore, load_results

torch = pytest.importorskip("torch")

TOP = 3
VARIANTS = ("default", "shuffle_options[seed=1]", "shuffle_options[seed=2]")
DEMO_VARIANTS = ("default", "shuffle_demos[seed=1]", "k_shot[k=1,seed=3]", "k_shot[k=3,seed=4]")
WORDS = (
    "cat dog bird fish horse king queen doctor teacher paris london rome berlin tokyo "
    "madrid red blue green black white small large old new"
).split()


def _questions(path, n: int, seed: int, *, trailing: str = "") -> None:
    """Write ``n`` seeded questions of three one- or two-word options (gold: a seeded index)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        subject = " ".join(rng.choice(WORDS, size=3))
        options = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 3)))) for _ in range(3)]
        rows.append(
            {
                "id": f"q{i}",
                "question": f"which {subject} lives near the river{trailing}",
                "choices": options,
                "gold": int(rng.integers(0, 3)),
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _direct(reference, prompt: str, continuation: str) -> dict:
    """The continuation's tokens, log-probs, entropies and alternatives: a float64 pass."""
    model, tokenizer = reference
    ctx = tokenizer(prompt)["input_ids"]
    whole = tokenizer(prompt + continuation)["input_ids"]
    assert whole[: len(ctx)] == ctx
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([whole])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    rows = range(len(ctx) - 1, len(whole) - 1)
    top = [torch.topk(logp[t], TOP) for t in rows]
    return {
        "tokens": [tokenizer.decode([t]) for t in whole[len(ctx) :]],
        "token_logprobs": [float(logp[t - 1, whole[t]]) for t in range(len(ctx), len(whole))],
        "token_entropies": [float(-(logp[t].exp() * logp[t]).sum()) for t in rows],
        "top_logprobs": [
            {tokenizer.decode([int(i)]): float(v) for v, i in zip(k.values, k.indices, strict=True)}
            for k in top
        ],
    }


@pytest.fixture
def forced(monkeypatch) -> list[int]:
    """How many answers each teacher-forcing call of the hf backend reads."""
    counts: list[int] = []
    original = HFBackend.teacher_force

    def counting(self, requests, answers):
        counts.append(len(answers))
        return original(self, requests, answers)

    monkeypatch.setattr(HFBackend, "teacher_force", counting)
    return counts


@pytest.mark.parametrize(("template", "trailing"), [("qa", ""), ("plain", " ")])
def test_the_chosen_options_features_equal_a_direct_forward_pass(
    tiny_lm_dir, reference, tmp_path, forced, template, trailing
):
    questions = tmp_path / "mcq.jsonl"
    _questions(questions, 6, seed=0, trailing=trailing)
    run = tmp_path / "run"
    args = [
        "-q", "choose", "-d", f"mcq_file[path={questions}]",
        "-b", f"hf[model={tiny_lm_dir},device=cpu]", "--template", template,
        "--top-logprobs", str(TOP), *[a for v in VARIANTS for a in ("--variant", v)],
        "--cache-dir", str(tmp_path / "cache"), "--out", str(run),
    ]  # fmt: skip
    assert main(args) == 0
    responses = RunStore(run).read(Response)
    assert len(responses) == 6 * len(VARIANTS)
    for r in responses:
        best = r.features["best"]
        chosen = r.meta["chosen"]
        # The plain template joins the option without a space after a question that
        # ends in one; teacher forcing reads the same text, prompt + continuation.
        continuation = ("" if trailing else " ") + r.text
        truth = _direct(reference, r.meta["prompt"], continuation)
        assert best["tokens"] == truth["tokens"]
        np.testing.assert_allclose(best["token_logprobs"], truth["token_logprobs"], atol=1e-5)
        np.testing.assert_allclose(best["token_entropies"], truth["token_entropies"], atol=1e-4)
        assert len(best["top_logprobs"]) == len(truth["top_logprobs"])
        for got, want in zip(best["top_logprobs"], truth["top_logprobs"], strict=True):
            assert got.keys() == want.keys()
            np.testing.assert_allclose([got[k] for k in want], list(want.values()), atol=1e-5)
        # The log-probs are the very numbers the choice compared.
        assert math.fsum(best["token_logprobs"]) == pytest.approx(
            r.meta["options"][chosen]["sum"], abs=1e-12
        )
        assert len(best["token_logprobs"]) == r.meta["options"][chosen]["n_tokens"]
        assert "unsupported" not in r.meta
    distinct = {(r.meta["prompt"], r.text) for r in responses}
    assert sum(forced) == len(distinct)  # one reading per distinct (prompt, option)

    # A new run with the same cache reads no answer again; the features are the same.
    again = tmp_path / "again"
    assert main([*args[:-1], str(again)]) == 0
    assert sum(forced) == len(distinct)
    first = {r.response_id: r.features for r in responses}
    assert {r.response_id: r.features for r in RunStore(again).read(Response)} == first


def test_perplexity_and_entropy_score_a_choose_run_and_enter_the_study(tiny_lm_dir, tmp_path):
    questions = tmp_path / "mcq.jsonl"
    _questions(questions, 8, seed=1)
    run = tmp_path / "run"
    args = [
        "-q", "choose", "-d", f"mcq_file[path={questions}]",
        "-b", f"hf[model={tiny_lm_dir},device=cpu]", "--template", "qa",
        *[a for v in VARIANTS for a in ("--variant", v)], "--out", str(run),
    ]  # fmt: skip
    assert main(args) == 0
    dataset = ["-d", f"mcq_file[path={questions}]"]
    detectors = ["-D", "perplexity", "-D", "mean_token_entropy"]
    assert main(["-q", "detect", *dataset, *detectors, "--out", str(run)]) == 0
    store = RunStore(run)
    by_id = {r.response_id: r for r in store.read(Response)}
    scores = store.read(Score)
    assert len(scores) == 2 * len(by_id) and all(s.value is not None for s in scores)
    for s in scores:
        best = by_id[s.response_id].features["best"]
        if s.detector == "perplexity":
            assert s.value == pytest.approx(math.exp(-np.mean(best["token_logprobs"])))
        else:
            assert s.value == pytest.approx(np.mean(best["token_entropies"]))
    study = ["-q", "study", "prompt_multiplicity", "--run", str(run), "--no-report"]
    assert main(study) == 0
    (result,) = [r for r in load_results(store) if r.study == "prompt_multiplicity"]
    assert set(result.table("detector_tests")["detector"]) == {"perplexity", "mean_token_entropy"}
    means = result.table("detector_means").set_index("detector")
    assert means.loc["perplexity", "n"] == 8  # every default answer scored


def _tiny_gpt2(folder, tiny_lm_dir):
    """A 2-layer GPT-2 with random weights on the Llama fixture's tokenizer."""
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_positions=256,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(1)
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_two_models_with_and_without_bm25_count_as_two_models(tiny_lm_dir, tmp_path):
    gpt2 = _tiny_gpt2(tmp_path / "gpt2", tiny_lm_dir)
    questions = tmp_path / "mcq.jsonl"
    _questions(questions, 10, seed=2)
    corpus = tmp_path / "passages.jsonl"
    rows = [{"id": f"p{i}", "text": f"the {w} lives near the river"} for i, w in enumerate(WORDS)]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = tmp_path / "mcq.toml"
    config.write_text(
        textwrap.dedent(
            f"""
            detectors = ["perplexity", "length"]
            reference = "gold"
            studies = ["prompt_multiplicity[min_models=2]"]
            [run]
            out = "run"
            cache_dir = "cache"
            report = false
            [[datasets]]
            name = "mcq_file"
            params = {{ path = "{questions}" }}
            [[backend]]
            name = "hf"
            params = {{ model = "{tiny_lm_dir}", device = "cpu" }}
            [[backend]]
            name = "hf"
            params = {{ model = "{gpt2}", device = "cpu" }}
            [choice]
            template = "qa"
            shots = 2
            variants = {json.dumps(list(DEMO_VARIANTS))}
            without_retrieval = true
            [choice.retriever]
            name = "bm25"
            params = {{ corpus = "passages.jsonl", k = 1, cache_dir = "idx" }}
            """
        ),
        encoding="utf-8",
    )
    assert main(["-q", "run", str(config)]) == 0
    store = RunStore(tmp_path / "run")
    responses = store.read(Response)
    per_model = 2 * 10 * len(DEMO_VARIANTS)  # retrieval settings x questions x variants
    assert len(responses) == 2 * per_model
    assert all(r.features["best"]["token_logprobs"] for r in responses)
    (result,) = [r for r in load_results(store) if r.study.startswith("prompt_multiplicity")]
    # (stored as CSV, an empty retriever - no retrieval - reads back as NaN)
    summary = result.table("multiplicity").fillna({"retriever": ""})
    assert len(summary) == 4 and summary["model"].nunique() == 2
    (rag,) = set(summary["retriever"]) - {""}
    assert rag.startswith("bm25[")
    assert "On mcq, 2 models answered without retrieval, and with bm25[" in result.finding
    tests = result.table("detector_tests").fillna({"retriever": ""})
    assert set(tests["detector"]) == {"perplexity", "length"}
    assert set(tests["retriever"]) == {"", rag}
    assert (tests["n_models"] <= 2).all()  # never 4: a retrieval setting is not a model
    means = result.table("detector_means").fillna({"retriever": ""})
    axes = {"correctness": ("mean_correct", "mean_incorrect"),
            "consistency": ("mean_agnostic", "mean_sensitive")}  # fmt: skip
    checked = 0
    for row in tests.itertuples(index=False):
        part = means[(means["detector"] == row.detector) & (means["retriever"] == row.retriever)]
        a, b = axes[row.axis]
        diffs = (part[a] - part[b]).dropna()
        assert row.n_models == len(diffs) and set(part["model"]) == set(summary["model"])
        if len(diffs) == 2:
            assert row.p_value == pytest.approx(stats.wilcoxon(diffs).pvalue)
            assert row.mean_difference == pytest.approx(diffs.mean())
            checked += 1
    assert checked >= 4  # tests across the two models ran in both settings
