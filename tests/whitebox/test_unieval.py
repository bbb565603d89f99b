"""The unieval labeler against UniEval's formula run by hand on a tiny random T5.

The evaluator's value is ``P(Yes) / (P(Yes) + P(No))`` of the first decoder
step (UniEval's ``metric/scorer.py``); here it is computed with a plain
float64 softmax of one unbatched forward pass per question, independently
of the labeler's batched ``sigmoid(z_Yes - z_No)``.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from _tiny_checkpoints import WORDS, build_t5

from realitycheck.errors import InvalidInputError, MissingDependencyError
from realitycheck.labelers import labelers
from realitycheck.labelers._checkpoints import Failed, in_batches
from realitycheck.labelers.unieval import UniEval
from realitycheck.records import Example, Response

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

CONSISTENCY = (
    "question: Is this claim consistent with the document? </s> claim: {} </s> document: {}"
)
GROUNDEDNESS = (
    "question: Is this response consistent with knowledge in the fact? "
    "</s> response: {} </s> fact: {}"
)


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory):
    return build_t5(tmp_path_factory.mktemp("tiny-unieval"), seed=0, head_std=0.1)


@pytest.fixture(scope="module")
def reference(t5_dir):
    """The tiny T5 and its tokenizer, loaded with plain transformers."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    return AutoModelForSeq2SeqLM.from_pretrained(t5_dir).eval(), AutoTokenizer.from_pretrained(
        t5_dir
    )


def p_yes(reference, question: str) -> float:
    """UniEval's score of one question: softmax of the first decoder step, P(Yes)/(P(Yes)+P(No))."""
    model, tokenizer = reference
    encoded = tokenizer(question, return_tensors="pt")
    start = torch.tensor([[model.config.decoder_start_token_id]])
    with torch.no_grad():
        logits = model(**encoded, decoder_input_ids=start).logits[0, 0].double()
    p = torch.softmax(logits, dim=-1)
    yes, no = (tokenizer(w, add_special_tokens=False)["input_ids"][0] for w in ("Yes", "No"))
    return float(p[yes] / (p[yes] + p[no]))


# "no" ends no sentence (realitycheck.text reads "no." as an abbreviation, as in "No. 5").
VOCABULARY = [w for w in WORDS if w != "no"]


def _sentences(rng, n: int) -> list[str]:
    return [" ".join(rng.choice(VOCABULARY, size=int(rng.integers(3, 8)))) for _ in range(n)]


def _dialogues(seed: int, n: int):
    rng = np.random.default_rng(seed)
    examples, responses, sentences = {}, [], {}
    for i in range(n):
        eid = f"e{i % 3}"
        examples.setdefault(
            eid,
            Example(
                example_id=eid,
                dataset="t",
                task="dialogue",
                context=". ".join(_sentences(rng, 3)) + ".",
            ),
        )
        parts = _sentences(rng, int(rng.integers(1, 4)))
        responses.append(
            Response(response_id=f"r{i}", example_id=eid, model="m", text=". ".join(parts) + ".")
        )
        sentences[f"r{i}"] = [p + "." for p in parts]
    return examples, responses, sentences


def test_consistency_is_the_mean_over_sentences_of_p_yes_over_yes_and_no(t5_dir, reference):
    examples, responses, sentences = _dialogues(seed=1, n=8)
    lab = UniEval(model=str(t5_dir), device="cpu", batch_size=3)
    labels = lab.label(responses, examples)
    expected = {
        r.response_id: np.mean(
            [
                p_yes(reference, CONSISTENCY.format(s, examples[r.example_id].context))
                for s in sentences[r.response_id]
            ]
        )
        for r in responses
    }
    for label in labels:
        s = expected[label.response_id]
        assert label.error == "" and label.labeler == lab.key
        assert label.score == pytest.approx(1 - s, abs=1e-6)  # higher = more likely hallucinated
        assert label.hallucinated is bool(s < 0.5)
        per = [float(x) for x in label.raw.split("per_sentence=")[1].split(",")]
        assert len(per) == len(sentences[label.response_id])
        assert np.mean(per) == pytest.approx(s, abs=1e-5)


def test_groundedness_asks_about_the_whole_response_and_the_threshold_splits_the_labels(
    t5_dir, reference
):
    examples, responses, _ = _dialogues(seed=2, n=6)
    expected = {
        r.response_id: p_yes(reference, GROUNDEDNESS.format(r.text, examples[r.example_id].context))
        for r in responses
    }
    threshold = float(np.median(list(expected.values())))
    lab = labelers.create_from_key(
        f'unieval[model="{t5_dir}",dimension=groundedness,threshold={threshold},device=cpu]'
    )
    labels = {x.response_id: x for x in lab.label(responses[::-1], examples)}
    assert {x.hallucinated for x in labels.values()} == {True, False}
    for rid, s in expected.items():
        assert labels[rid].score == pytest.approx(1 - s, abs=1e-6)
        assert labels[rid].hallucinated is (s < threshold)
        assert float(labels[rid].raw.removeprefix("groundedness=")) == pytest.approx(s, abs=1e-5)


def test_missing_knowledge_or_text_is_an_error_and_loads_nothing():
    examples = {
        "k": Example(example_id="k", dataset="t", task="dialogue", context="the tower is tall."),
        "none": Example(example_id="none", dataset="t", task="dialogue"),
    }
    responses = [
        Response(response_id="a", example_id="none", model="m", text="it is tall."),
        Response(response_id="b", example_id="k", model="m", text="  "),
        Response(response_id="c", example_id="gone", model="m", text="it is tall."),
    ]
    labels = UniEval(model="/no/such/model", device="cpu").label(responses, examples)
    assert [x.hallucinated for x in labels] == [None, None, None]
    assert [x.error for x in labels] == [
        "the example has no context",
        "the response is empty",
        "example 'gone' was not given",
    ]
    assert not any(x.failed for x in labels)


def test_a_model_that_cannot_be_loaded_is_named():
    examples = {"k": Example(example_id="k", dataset="t", task="dialogue", context="a fact.")}
    responses = [Response(response_id="a", example_id="k", model="m", text="a claim.")]
    with pytest.raises(
        InvalidInputError, match=r"unieval cannot load '/no/such/model' as an encoder-decoder"
    ):
        UniEval(model="/no/such/model", device="cpu").label(responses, examples)


def test_without_torch_it_names_itself_and_the_hf_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(
        MissingDependencyError,
        match=r"^The unieval labeler needs the package 'torch'.*realitycheck\[hf\]",
    ):
        UniEval(model="m", device="cpu").consistency(["question: x"])


def test_a_failing_batch_is_rerun_item_by_item_so_only_the_bad_item_fails():
    calls: list[list[str]] = []

    def run(batch: list[str]) -> list[int]:
        calls.append(batch)
        if "bad" in batch:
            raise RuntimeError("CUDA out of memory (pretend)")
        return [len(x) for x in batch]

    items = ["aa", "bad", "c", "dddd", "ee"]
    out = in_batches(items, run, batch_size=2, size=len)
    assert out[:1] + out[2:] == [2, 1, 4, 2]
    assert out[1] == Failed("RuntimeError: CUDA out of memory (pretend)")
    assert ["bad"] in calls  # retried alone
