import csv
import json
from pathlib import Path

import numpy as np
import pytest
from rouge_score import rouge_scorer

from realitycheck.errors import InvalidInputError
from realitycheck.labelers import labelers
from realitycheck.labelers.rouge import rouge_l_f1
from realitycheck.records import Example, Response


def _truthfulqa_pairs(data_dir: Path) -> tuple[list[str], list[list[str]]]:
    """Human-judged TruthfulQA answers and their question's correct answers."""
    folder = data_dir / "truthfulqa"
    correct = {}
    with open(folder / "TruthfulQA.csv", encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f):
            answers = [a.strip() for a in row["Correct Answers"].split(";") if a.strip()]
            correct[row["Question"].strip()] = answers
    predictions, references = [], []
    with open(folder / "finetune_truth.jsonl", encoding="utf-8") as f:
        for line in f:
            prompt = json.loads(line)["prompt"]
            question, answer = prompt.removeprefix("Q: ").removesuffix("\nTrue:").split("\nA: ", 1)
            predictions.append(answer)
            references.append(correct.get(question.strip(), []))
    return predictions, references


def _reference(predictions, references, use_stemmer):
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)
    return np.array(
        [
            max((scorer.score(r, p)["rougeL"].fmeasure for r in refs), default=np.nan)
            for p, refs in zip(predictions, references, strict=True)
        ]
    )


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_rouge_l_f1_equals_rouge_score_on_truthfulqa(data_dir, use_stemmer):
    predictions, references = _truthfulqa_pairs(data_dir)
    rng = np.random.default_rng(20240601)
    rows = rng.choice(len(predictions), size=2000, replace=False)
    preds = [predictions[i] for i in rows]
    refs = [references[i] for i in rows]
    ours = rouge_l_f1(preds, refs, use_stemmer=use_stemmer)
    expected = _reference(preds, refs, use_stemmer)
    assert np.array_equal(np.isnan(ours), np.isnan(expected))
    assert np.nanmax(np.abs(ours - expected)) <= 1e-9
    assert 0.05 < np.nanmean(ours) < 0.95  # real, varied values, not all 0 or 1


EDGE_CASES = [
    ("", ["a reference"]),
    ("an answer", [""]),
    ("", [""]),
    ("!!! ...", ["?!"]),
    ("Héllo wörld ÇA VA", ["hello world ca va", "h llo w rld"]),
    ("İstanbul Kelvin \u212a straße", ["i stanbul kelvin k stra e"]),
    ("日本語 の テキスト 42", ["42", "日本語"]),
    ("running runs ran the runner's", ["run running", "the runners ran"]),
    ("a a a a b", ["a b a b a b"]),
    ("x\x00y z", ["x y", "z\x00"]),
    ("same same", ["same same", "same same"]),
    ("one", []),
]


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_rouge_l_f1_equals_rouge_score_on_edge_cases(use_stemmer):
    predictions = [p for p, _ in EDGE_CASES]
    references = [r for _, r in EDGE_CASES]
    ours = rouge_l_f1(predictions, references, use_stemmer=use_stemmer)
    expected = _reference(predictions, references, use_stemmer)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-12)
    assert np.isnan(ours[-1])


def test_rouge_l_f1_equals_rouge_score_on_long_random_texts():
    rng = np.random.default_rng(7)
    vocab = np.array(["the", "cat", "sat", "on", "mat", "dogs", "ran", "1", "2", "x"])
    predictions = [" ".join(rng.choice(vocab, rng.integers(0, 300))) for _ in range(40)]
    references = [
        [" ".join(rng.choice(vocab, rng.integers(0, 300))) for _ in range(rng.integers(1, 4))]
        for _ in range(40)
    ]
    ours = rouge_l_f1(predictions, references)
    np.testing.assert_allclose(ours, _reference(predictions, references, False), atol=1e-12)


def test_rouge_l_f1_is_order_invariant_and_empty_input_gives_empty_array():
    predictions = ["the cat sat", "a dog ran far", "nothing"]
    references = [["the cat sat down"], ["dog far"], ["something"]]
    forward = rouge_l_f1(predictions, references)
    backward = rouge_l_f1(predictions[::-1], references[::-1])
    np.testing.assert_array_equal(forward, backward[::-1])
    assert rouge_l_f1([], []).shape == (0,)


@pytest.mark.parametrize(
    ("predictions", "references", "match"),
    [
        ("text", [["a"]], "'predictions' parameter of rouge_l_f1 must be a sequence"),
        (["a"], "a", "'references' parameter of rouge_l_f1 must be a sequence"),
        (["a", "b"], [["a"]], "one entry per prediction"),
        (["a"], ["a"], "Got the string 'a' at position 0"),
        ([None], [["a"]], "'predictions' .* sequence of strings. Got None at position 0"),
        (["a"], [[1]], r"'references' .* sequences of strings. Got \[1\] at position 0"),
        (["a"], [5], "'references' .* sequences of strings. Got 5 at position 0"),
        ([["a"]], [["a"]], r"'predictions' .* sequence of strings. Got \['a'\] at position 0"),
    ],
)
def test_rouge_l_f1_rejects_bad_input(predictions, references, match):
    with pytest.raises(InvalidInputError, match=match):
        rouge_l_f1(predictions, references)


def test_rouge_l_f1_rejects_non_bool_stemmer():
    with pytest.raises(InvalidInputError, match="'use_stemmer' parameter of rouge_l_f1 must be"):
        rouge_l_f1(["a"], [["a"]], use_stemmer="yes")


def _example(example_id, references=(), context=""):
    return Example(
        example_id=example_id, dataset="t", task="qa", references=tuple(references), context=context
    )


def _response(response_id, example_id, text):
    return Response(response_id=response_id, example_id=example_id, model="m", text=text)


def test_rouge_l_labeler_scores_thresholds_and_errors():
    examples = {
        "e1": _example("e1", ["the cat sat on the mat"]),
        "e2": _example("e2", []),
        "e3": _example("e3", ["!!!"]),
    }
    responses = [
        _response("r1", "e1", "the cat sat on the mat"),
        _response("r2", "e1", "dogs bark loudly"),
        _response("r3", "e1", "the cat"),  # F1 = 2 * 1 * (2/6) / (1 + 2/6) = 0.5
        _response("r4", "e2", "anything"),
        _response("r5", "e1", "???"),
        _response("r6", "e3", "anything"),
        _response("r7", "missing", "anything"),
    ]
    labels = labelers.create("rouge_l").label(responses, examples)
    assert [lab.response_id for lab in labels] == [r.response_id for r in responses]
    assert [lab.hallucinated for lab in labels[:3]] == [False, True, False]
    assert labels[0].score == pytest.approx(0.0) and labels[1].score == pytest.approx(1.0)
    assert labels[2].score == pytest.approx(0.5) and labels[2].raw == "rouge_l_f1=0.5000"
    assert labels[1].category == "incorrect" and labels[0].category == "correct"
    assert labels[0].labeler == "rouge_l" and json.loads(labels[0].spec)["name"] == "rouge_l"
    for label, error in zip(
        labels[3:],
        ["no reference", "response has no word", "no reference has a word", "not given"],
        strict=True,
    ):
        assert label.hallucinated is None and label.score is None and error in label.error

    strict = labelers.create_from_key("rouge_l[threshold=0.6]").label(responses[:3], examples)
    assert [lab.hallucinated for lab in strict] == [False, True, True]
    assert strict[0].labeler == "rouge_l[threshold=0.6]"


def test_rouge_l_labeler_stemmer_changes_the_similarity():
    examples = {"e": _example("e", ["the runners were running"])}
    responses = [_response("r", "e", "the runner was runs")]
    plain = labelers.create("rouge_l").label(responses, examples)[0]
    stemmed = labelers.create("rouge_l", use_stemmer=True).label(responses, examples)[0]
    assert stemmed.score < plain.score


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"threshold": 1.5}, r"'threshold' parameter of rouge_l must be a float in \[0, 1\]"),
        ({"threshold": float("nan")}, "'threshold' parameter of rouge_l"),
        ({"threshold": True}, "'threshold' parameter of rouge_l"),
        ({"use_stemmer": 1}, "'use_stemmer' parameter of rouge_l must be a bool"),
    ],
)
def test_rouge_l_labeler_rejects_bad_params(params, match):
    with pytest.raises(InvalidInputError, match=match):
        labelers.create("rouge_l", **params)
