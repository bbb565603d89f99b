"""The q2 labeler against Q²'s pipeline run step by step with plain transformers.

Models: a tiny random T5 as the question generator, the hand-set reader of
``_tiny_checkpoints`` (it answers ``paris``, else ``rome``, else ``1889``,
else nothing), and a tiny random 3-label NLI classifier served by the
``hf`` backend's ``pairs`` capability. The reference below generates,
reads and classifies one input at a time, unbatched, and applies the
rules of Q²'s ``run_pipeline.py`` and ``run_nli.py`` itself.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from _tiny_checkpoints import build_classifier, build_reader, build_t5

from realitycheck.backends import CallCache
from realitycheck.errors import MissingDependencyError
from realitycheck.labelers import labelers
from realitycheck.labelers.q2 import (
    Q2,
    answer_candidates,
    personal,
    q2_f1,
    q2_normalize,
)
from realitycheck.records import Example, Response

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

NLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}
KNOWLEDGE = {
    "paris": "The Eiffel Tower is in Paris. It was completed in 1889.",
    "rome": "The capital of Italy is Rome.",
    "none": "The tower is tall and the river is long.",
}
RESPONSES = [  # (knowledge, response)
    ("paris", "The tower is in Paris."),  # same answer: F1 = 1
    ("paris", "It is in Rome, near the river."),  # other answer: F1 = 0, NLI decides
    ("none", "The capital is Paris. It was built in 1889."),  # no answer in the knowledge: 0
    ("rome", "The king saw a bird."),  # no span the reader gives back: NLI fallback
]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-q2")
    return {
        "generator": build_t5(root / "generator", seed=4),
        "reader": build_reader(root / "reader"),
        "nli": build_classifier(root / "nli", NLI_LABELS, seed=5),
    }


@pytest.fixture(scope="module")
def reference(models):
    from transformers import (
        AutoModelForQuestionAnswering,
        AutoModelForSeq2SeqLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
    )

    loaded = {
        "generator": AutoModelForSeq2SeqLM,
        "reader": AutoModelForQuestionAnswering,
        "nli": AutoModelForSequenceClassification,
    }
    return {
        k: (auto.from_pretrained(models[k]).eval(), AutoTokenizer.from_pretrained(models[k]))
        for k, auto in loaded.items()
    }


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One call cache for the module: the tests after the first read its questions from it."""
    with CallCache(tmp_path_factory.mktemp("q2-cache") / "calls.sqlite") as calls:
        yield calls


def ask(reference, span: str, response: str, max_length: int) -> list[str]:
    model, tokenizer = reference["generator"]
    enc = tokenizer([f"answer: {span}  context: {response} </s>"], return_tensors="pt")
    with torch.no_grad():
        ids = model.generate(
            **enc,
            max_length=max_length,
            num_beams=5,
            no_repeat_ngram_size=3,
            num_return_sequences=5,
            early_stopping=True,
            do_sample=False,
        )
    texts = tokenizer.batch_decode(ids, skip_special_tokens=True)
    return [t.replace("question: ", "", 1).strip() for t in texts]


def read(reference, question: str, text: str) -> str | None:
    """Arg-max start and end over the input; no answer unless both lie in the text, in order."""
    model, tokenizer = reference["reader"]
    enc = tokenizer(question, text, return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    segment = enc.sequence_ids(0)
    with torch.no_grad():
        out = model(**enc)
    s, e = int(out.start_logits[0].argmax()), int(out.end_logits[0].argmax())
    if e < s or any(segment[k] != 1 for k in range(s, e + 1)):
        return None
    return text[offsets[s][0] : offsets[e][1]]


def nli(reference, premise: str, hypothesis: str) -> str:
    model, tokenizer = reference["nli"]
    enc = tokenizer(premise, hypothesis, truncation=True, max_length=64, return_tensors="pt")
    with torch.no_grad():
        top = int(model(**enc).logits[0].argmax())
    return NLI_LABELS[top].lower()


def q2_by_hand(reference, knowledge: str, response: str, max_length: int) -> dict:
    """Q² of one response with NLI, following the authors' pipeline step by step."""
    rows = []
    for span in answer_candidates(response):
        for question in ask(reference, span, response, max_length):
            if personal(question):
                continue
            answer = read(reference, question, response)
            if answer is None or q2_normalize(answer) != q2_normalize(span):
                continue
            known = read(reference, question, knowledge)
            f1 = q2_f1(span, known) if known is not None else 0.0
            value, label = f1, ""
            if known is not None and 0 <= f1 < 1:
                label = nli(reference, f"{question} {known}.", f"{question} {span}.")
                value = {"entailment": 1.0, "contradiction": 0.0}.get(label, f1)
            rows.append(
                {"answer": span, "question": question, "f1": f1, "nli": label, "value": value}
            )
            break  # one question per span: the first valid one
    if not rows:
        label = nli(reference, knowledge.lower(), response)
        return {"q2": {"entailment": 1.0, "contradiction": 0.0}.get(label, 0.5), "fallback": label}
    return {"q2": float(np.mean([r["value"] for r in rows])), "questions": rows}


def _records():
    examples = {
        k: Example(example_id=k, dataset="t", task="dialogue", context=text)
        for k, text in KNOWLEDGE.items()
    }
    responses = [
        Response(response_id=f"r{i}", example_id=k, model="m", text=text)
        for i, (k, text) in enumerate(RESPONSES)
    ]
    return examples, responses


def _key(models, **extra) -> str:
    params = {
        "generator": f'"{models["generator"]}"',
        "reader": f'"{models["reader"]}"',
        "judge": f'hf[model="{models["nli"]}",device=cpu]',
        "max_question_tokens": 6,
        "device": "cpu",
        "batch_size": 3,
    } | extra
    return "q2[" + ",".join(f"{k}={v}" for k, v in params.items() if v is not None) + "]"


def test_q2_equals_the_pipeline_run_step_by_step_and_a_rerun_is_read_from_the_cache(
    models, reference, cache, monkeypatch
):
    from realitycheck.backends.hf import HFBackend

    examples, responses = _records()
    lab = labelers.create_from_key(_key(models))
    labels = lab.label(responses, examples, cache=cache)
    seen = set()
    for response, label in zip(responses, labels, strict=True):
        knowledge = examples[response.example_id].context
        expected = q2_by_hand(reference, knowledge, response.text, max_length=6)
        raw = json.loads(label.raw)
        assert label.error == ""
        assert raw["q2"] == pytest.approx(expected["q2"])
        assert label.score == pytest.approx(1 - expected["q2"])  # higher = more likely hallucinated
        assert label.hallucinated is (expected["q2"] < 0.5)
        assert raw["fallback"] == expected.get("fallback")
        fields = ("answer", "question", "f1", "nli", "value")
        assert [{k: q[k] for k in fields} for q in raw["questions"]] == expected.get(
            "questions", []
        )
        seen.update(q["nli"] or f"f1={q['f1']}" for q in raw["questions"])
        seen.add("fallback" if raw["fallback"] else "questions")
    # The responses take every road: an equal answer, NLI on a differing one, the fallback.
    assert {"f1=1.0", "fallback", "questions"} <= seen
    assert seen & {"entailment", "contradiction", "neutral"}

    asked: list[int] = []
    generate, score_pairs = Q2._generate, HFBackend.score_pairs
    monkeypatch.setattr(
        Q2, "_generate", lambda self, xs: asked.append(len(xs)) or generate(self, xs)
    )
    monkeypatch.setattr(
        HFBackend,
        "score_pairs",
        lambda self, pairs, labels=(): (
            asked.append(len(pairs)) or score_pairs(self, pairs, labels=labels)
        ),
    )
    again = lab.label(responses[::-1], examples, cache=cache)
    assert asked == []  # no question generated, no pair classified again
    assert {x.response_id: x for x in again} == {x.response_id: x for x in labels}


def test_without_nli_q2_is_the_mean_f1_and_a_response_without_a_question_has_none(models, cache):
    examples, responses = _records()
    lab = labelers.create_from_key(_key(models, judge=None))
    labels = {x.response_id: x for x in lab.label(responses, examples, cache=cache)}
    assert labels["r0"].score == 0.0 and labels["r0"].hallucinated is False  # Paris = Paris
    assert json.loads(labels["r2"].raw)["questions"][0]["knowledge_answer"] is None
    assert labels["r2"].score == 1.0  # the knowledge has no answer: F1 = 0
    assert labels["r3"].hallucinated is None and "needs the judge parameter" in labels["r3"].error
    for label in labels.values():
        if label.score is not None:
            raw = json.loads(label.raw)
            assert raw["q2"] == raw["q2_f1"] == pytest.approx(1 - label.score)
            assert all(q["nli"] == "" for q in raw["questions"])


def test_missing_knowledge_is_an_error_record_and_loads_nothing():
    examples = {"k": Example(example_id="k", dataset="t", task="dialogue")}
    responses = [Response(response_id="a", example_id="k", model="m", text="It is in Paris.")]
    (label,) = Q2(generator="/no/gen", reader="/no/reader", device="cpu").label(responses, examples)
    assert label.hallucinated is None and label.error == "the example has no context"


@pytest.mark.parametrize(
    ("text", "spans"),
    [
        (
            "The Eiffel Tower was completed in 1889 in Paris.",
            ["Eiffel Tower", "1889", "Paris", "The Eiffel Tower"],
        ),
        (
            "Sure, I love the Tower of London and my old dog. It cost 9,817 dollars!",
            ["Tower of London", "9,817", "the Tower", "my old dog"],
        ),
        ("Yes. I do not know.", []),
        ("Paris Paris paris. the city", ["Paris Paris", "the city"]),
    ],
)
def test_answer_spans_are_name_like_runs_then_determiner_phrases(text, spans):
    assert answer_candidates(text) == spans


@pytest.mark.parametrize(
    ("span", "answer", "f1"),
    [
        ("Paris", "paris.", 1.0),
        ("in Paris", "Paris", 1.0),  # Q² drops "in" and "our" as well as the articles
        ("the Eiffel Tower", "Eiffel tower in Paris", 2 * (2 / 3 * 1) / (2 / 3 + 1)),
        ("1889", "1890", 0.0),
        ("the", "a", 0.0),  # nothing left after normalisation shares no token
    ],
)
def test_q2_f1_is_q2s_token_f1(span, answer, f1):
    assert q2_f1(span, answer) == pytest.approx(f1)


def test_personal_questions_have_i_you_my_or_your():
    assert personal("What do you like?") and personal("Where is my dog?")
    assert not personal("Where is the tower?") and not personal("Which island?")


def test_without_torch_it_names_itself_and_the_hf_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match=r"^The q2 labeler needs the package 'torch'"):
        Q2(generator="g", reader="r", device="cpu").answers([("q", "t")])
