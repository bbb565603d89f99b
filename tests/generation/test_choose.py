"""The choose stage on the mock backend: likelihood choice, normalisations, variants, resumption."""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np
import pytest
from scipy.special import softmax

from realitycheck.backends import CAPABILITIES, CallCache
from realitycheck.backends.mock import MockBackend, tokenize
from realitycheck.errors import InvalidInputError
from realitycheck.generation import (
    ChoicePlan,
    McqPrompt,
    OptionScore,
    choose_option,
    render,
    true_mass,
    variants,
)
from realitycheck.pipeline import choose
from realitycheck.records import Example, Label, Response
from realitycheck.store import RunStore

LOGPROBS = (-0.3, -2.0, -0.7)


def _mcq(i: int, choices: tuple[str, ...], gold: list[int], dataset: str = "toy") -> Example:
    return Example(
        example_id=f"{dataset}/{i}",
        dataset=dataset,
        task="mcq",
        question=f"question number {i} is",
        choices=choices,
        references=tuple(choices[g] for g in gold),
        meta={"gold": gold},
    )


EXAMPLES = [
    _mcq(0, ("red", "a very long blue answer", "green one"), [0]),
    _mcq(1, ("two words", "x", "three more words"), [1, 2]),
    _mcq(2, ("alpha beta", "gamma", "delta epsilon zeta eta"), [2]),
    _mcq(3, ("yes", "no"), [1]),
]


def _mock() -> MockBackend:
    return MockBackend(logprob=LOGPROBS)


def _expected_scores(continuation: str) -> tuple[float, int]:
    """The mock's documented rule: token t has LOGPROBS[t % 3]."""
    n = len(tokenize(continuation))
    return math.fsum(LOGPROBS[t % 3] for t in range(n)), n


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_choose_option_is_the_argmax_of_the_normalised_score(seed):
    rng = np.random.default_rng(seed)
    for _ in range(50):
        k = int(rng.integers(2, 7))
        sums = -rng.gamma(2.0, 3.0, size=k)
        tokens = rng.integers(1, 9, size=k)
        chars = rng.integers(1, 40, size=k)
        scores = [
            OptionScore(
                index=i, loglik=float(sums[i]), n_tokens=int(tokens[i]), n_chars=int(chars[i])
            )
            for i in range(k)
        ]
        assert choose_option(scores, "none") == int(np.argmax(sums))
        assert choose_option(scores, "token") == int(np.argmax(sums / tokens))
        assert choose_option(scores, "char") == int(np.argmax(sums / chars))


def test_ties_go_to_the_lowest_index_and_bad_normalisation_fails():
    scores = [OptionScore(index=i, loglik=-1.0, n_tokens=1, n_chars=1) for i in (2, 0, 1)]
    assert choose_option(scores, "token") == 0
    with pytest.raises(InvalidInputError, match="normalisation must be one of"):
        choose_option(scores, "bytes")


def test_true_mass_is_truthfulqa_mc2():
    rng = np.random.default_rng(7)
    for _ in range(20):
        lls = -rng.gamma(2.0, 20.0, size=6)  # large magnitudes: exp() alone would underflow
        gold = [0, 3]
        assert true_mass(list(lls), gold) == pytest.approx(float(softmax(lls)[gold].sum()))


def test_templates_render_the_parts():
    prompt = McqPrompt(
        question="Q1?",
        order=(1, 0),
        instruction="Pick.",
        demos=(("D?", "d"),),
        demo_ids=("x/1",),
    )
    assert render(prompt, ["a", "b"], "qa") == ("Pick.\n\nQ: D?\nA: d\n\nQ: Q1?\nA:", [" b", " a"])
    assert render(prompt, ["a", "b"], "plain") == ("Pick.\n\nD? d\n\nQ1?", [" b", " a"])
    assert render(prompt, ["a", "b"], "letters") == (
        "Pick.\n\nD?\nAnswer: d\n\nQ1?\nA. b\nB. a\nAnswer:",
        [" A", " B"],
    )


def _sent(monkeypatch) -> list[int]:
    counts: list[int] = []
    original = MockBackend.loglik_tokens

    def counting(self, pairs):
        if pairs:
            counts.append(len(pairs))
        return original(self, pairs)

    monkeypatch.setattr(MockBackend, "loglik_tokens", counting)
    return counts


@pytest.mark.parametrize("normalisation", ["token", "char", "none"])
def test_stage_stores_scores_choices_and_gold_labels(tmp_path, monkeypatch, normalisation):
    sent = _sent(monkeypatch)
    store = RunStore(tmp_path / "run")
    cache = CallCache(tmp_path / "cache.sqlite")
    plan = ChoicePlan(normalisation=normalisation)
    report = choose(store, EXAMPLES, _mock(), plan, [variants.create("default")], cache=cache)
    assert report.computed == 4 and report.pairs_scored == sum(len(e.choices) for e in EXAMPLES)
    responses = {r.example_id: r for r in store.read(Response)}
    labels = {lab.response_id: lab for lab in store.read(Label)}
    for e in EXAMPLES:
        r = responses[e.example_id]
        figures = []
        for i, option in enumerate(e.choices):
            total, n = _expected_scores(" " + option)
            got = r.meta["options"][i]
            assert got["sum"] == pytest.approx(total) and got["n_tokens"] == n
            assert got["n_chars"] == len(option)
            figures.append(
                {"token": total / n, "char": total / len(option), "none": total}[normalisation]
            )
        assert r.meta["chosen"] == int(np.argmax(figures)) and r.text == e.choices[r.meta["chosen"]]
        assert r.meta["normalisation"] == normalisation and r.decoding == "loglik"
        assert r.meta["prompt"] == e.question
        label = labels[r.response_id]
        assert label.labeler == "gold"
        assert label.hallucinated is (r.meta["chosen"] not in e.meta["gold"])
    again = choose(store, EXAMPLES, _mock(), plan, [variants.create("default")], cache=cache)
    assert (again.computed, again.reused, again.pairs_scored) == (0, 4, 0)
    assert sent == [report.pairs_scored]


def test_rerun_in_a_new_run_pays_nothing_thanks_to_the_cache(tmp_path, monkeypatch):
    sent = _sent(monkeypatch)
    cache = CallCache(tmp_path / "cache.sqlite")
    vs = [variants.create("default"), variants.create("shuffle_options", seed=1)]
    choose(RunStore(tmp_path / "a"), EXAMPLES, _mock(), ChoicePlan(), vs, cache=cache)
    calls = len(sent)
    report = choose(RunStore(tmp_path / "b"), EXAMPLES, _mock(), ChoicePlan(), vs, cache=cache)
    assert report.computed == 8 and report.pairs_scored == 0 and len(sent) == calls


def test_shuffled_options_in_the_letters_template_follow_the_gold_index(tmp_path):
    shuffle = variants.create("shuffle_options", seed=4)
    store = RunStore(tmp_path / "run")
    choose(store, EXAMPLES, _mock(), ChoicePlan(template="letters"), [shuffle])
    for r in store.read(Response):
        e = next(x for x in EXAMPLES if x.example_id == r.example_id)
        order = r.meta["order"]
        assert sorted(order) == list(range(len(e.choices)))
        for position, original in enumerate(order):
            assert f"{chr(65 + position)}. {e.choices[original]}" in r.meta["prompt"]
        # every letter scores the same under the mock: the first letter wins the tie
        # by its lowest original index, which the stored choice names in the example's order
        assert r.text == e.choices[r.meta["chosen"]]
    orders = [tuple(r.meta["order"]) for r in store.read(Response)]
    assert any(o != tuple(sorted(o)) for o in orders)


def test_variants_are_seeded_by_key_and_example():
    base = McqPrompt(question="q", order=(0, 1, 2, 3, 4, 5))
    e = _mcq(9, ("a", "b", "c", "d", "e", "f"), [0])
    pool = {"toy": [e]}

    def order(seed: int) -> tuple[int, ...]:
        (out,) = variants.create("shuffle_options", seed=seed).apply([base], [e], pool=pool)
        return out.order

    assert order(1) == order(1) and order(1) != order(2)


def test_k_shot_never_draws_the_question_itself_and_skips_a_small_pool(tmp_path):
    k_shot = variants.create("k_shot", k=3, seed=0)
    store = RunStore(tmp_path / "run")
    report = choose(store, EXAMPLES, _mock(), ChoicePlan(template="qa"), [k_shot])
    assert report.computed == 4
    for r in store.read(Response):
        assert len(r.meta["demos"]) == 3 and r.example_id not in r.meta["demos"]
    small = choose(RunStore(tmp_path / "small"), EXAMPLES[:2], _mock(), ChoicePlan(), [k_shot])
    assert small.computed == 0 and small.skipped[k_shot.key]["questions"] == 2
    assert "only 1 other questions" in small.skipped[k_shot.key]["reason"]


def test_shuffle_demos_is_skipped_without_demonstrations_and_applies_with_them(tmp_path):
    vs = [variants.create("default"), variants.create("shuffle_demos", seed=2)]
    store = RunStore(tmp_path / "run")
    report = choose(store, EXAMPLES, _mock(), ChoicePlan(), vs)
    assert report.computed == 4
    assert report.skipped["shuffle_demos[seed=2]"]["questions"] == 4
    assert "no demonstrations to shuffle" in report.skipped["shuffle_demos[seed=2]"]["reason"]
    manifest = store.read_manifest()["config"]["choice"]
    (entry,) = manifest.values()
    assert entry["skipped"]["shuffle_demos[seed=2]"]["questions"] == 4
    assert entry["variants"] == ["default", "shuffle_demos[seed=2]"] and entry["labeler"] == "gold"
    assert entry["datasets"] == sorted({e.dataset for e in EXAMPLES})
    assert entry["component_keys"] == {"backend": _mock().key, "plan": ChoicePlan().key}
    with_demos = choose(RunStore(tmp_path / "demos"), EXAMPLES, _mock(), ChoicePlan(shots=3), vs)
    assert with_demos.computed == 8 and not with_demos.skipped


def test_instruction_wording_comes_from_the_file(tmp_path):
    wordings = tmp_path / "wordings.txt"
    wordings.write_text(
        "Choose the true continuation.\n\nPick the correct one.\n", encoding="utf-8"
    )
    v = variants.create_from_key(f"instruction[file={wordings},line=3]")
    store = RunStore(tmp_path / "run")
    choose(store, EXAMPLES[:1], _mock(), ChoicePlan(), [v])
    (r,) = store.read(Response)
    assert r.meta["prompt"].startswith("Pick the correct one.\n\n")
    with pytest.raises(InvalidInputError, match="Line 2 of the instruction file holds no wording"):
        variants.create("instruction", file=str(wordings), line=2)
    with pytest.raises(InvalidInputError, match="Cannot read the instruction file"):
        variants.create("instruction", file=str(tmp_path / "missing.txt"))


def test_paraphrases_are_cached_and_stored(tmp_path, monkeypatch):
    paraphraser = MockBackend(replies=("question number (\\d+)=>restated question {1} is",))
    v = variants.create("paraphrase", backend=paraphraser, seed=1)
    assert v.key.startswith("paraphrase[backend=mock[")
    generated: list[int] = []
    original = MockBackend.generate

    def counting(self, requests):
        generated.append(len(requests))
        return original(self, requests)

    monkeypatch.setattr(MockBackend, "generate", counting)
    cache = CallCache(tmp_path / "cache.sqlite")
    choose(RunStore(tmp_path / "a"), EXAMPLES, _mock(), ChoicePlan(), [v], cache=cache)
    assert generated == [4]
    responses = RunStore(tmp_path / "a").read(Response)
    assert {r.meta["paraphrase"] for r in responses} == {
        f"restated question {i} is" for i in range(4)
    }
    assert all(r.meta["prompt"] == r.meta["paraphrase"] for r in responses)
    choose(RunStore(tmp_path / "b"), EXAMPLES, _mock(), ChoicePlan(), [v], cache=cache)
    assert generated == [4]  # the second run paraphrased from the cache


def test_a_failed_paraphrase_is_skipped_not_fatal(tmp_path):
    v = variants.create("paraphrase", backend=MockBackend(fail_on="number 2"))
    report = choose(RunStore(tmp_path / "run"), EXAMPLES, _mock(), ChoicePlan(), [v])
    assert report.computed == 3 and report.skipped[v.key]["questions"] == 1
    assert "the paraphrase failed" in report.skipped[v.key]["reason"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class _NoScoring(MockBackend):
    capabilities: ClassVar[frozenset[str]] = CAPABILITIES - {"loglik"}


def test_bad_input_fails_before_any_call(tmp_path, monkeypatch):
    sent = _sent(monkeypatch)
    store = RunStore(tmp_path / "run")
    default = [variants.create("default")]
    with pytest.raises(InvalidInputError, match="choose needs loglik"):
        choose(store, EXAMPLES, _NoScoring(), ChoicePlan(), default)
    blank = dataclasses.replace(EXAMPLES[1], choices=("ok", "  ", "x"))
    with pytest.raises(InvalidInputError, match=r"Example 'toy/1' of 'toy': option 1 is empty"):
        choose(store, [EXAMPLES[0], blank], _mock(), ChoicePlan(), default)
    outside = dataclasses.replace(EXAMPLES[0], meta={"gold": [5]})
    with pytest.raises(InvalidInputError, match="'toy/0'.*indices among its 3 options"):
        choose(store, [outside], _mock(), ChoicePlan(), default)
    qa = dataclasses.replace(EXAMPLES[0], task="qa")
    with pytest.raises(InvalidInputError, match="choose answers mcq only"):
        choose(store, [qa], _mock(), ChoicePlan(), default)
    with pytest.raises(InvalidInputError, match="'template' parameter of choice"):
        ChoicePlan(template="bullets")
    assert sent == [] and not store.read(Response)
