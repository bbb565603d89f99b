import re
import string
from collections import Counter

import numpy as np
import pytest
import sacrebleu

from realitycheck.errors import InvalidInputError
from realitycheck.labelers import labelers
from realitycheck.labelers.lexical import token_f1
from realitycheck.records import Example, Response

PIECES = [
    "The",
    "the",
    "a",
    "An",
    "cat",
    "Cat",
    "cats",
    "sat",
    "on",
    "mat",
    ",",
    ".",
    "!",
    "'s",
    "-",
    "1",
    "42",
    "theory",
    " ",
    "  ",
    "dog",
    "é",
]


def _random_text(rng, max_pieces=10):
    return " ".join(rng.choice(PIECES, size=rng.integers(0, max_pieces)))


def _squad_tokens(s):
    # Independent transcription of the SQuAD script: lower, drop punctuation,
    # drop articles, fix whitespace.
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return re.sub(r"\b(a|an|the)\b", " ", s).split()


def _squad_f1(prediction, reference):
    p, r = _squad_tokens(prediction), _squad_tokens(reference)
    if not p or not r:
        return float(p == r)
    same = sum((Counter(p) & Counter(r)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(r)
    return 2 * precision * recall / (precision + recall)


def _example(example_id, references=(), context=""):
    return Example(
        example_id=example_id, dataset="t", task="qa", references=tuple(references), context=context
    )


def _response(response_id, example_id, text):
    return Response(response_id=response_id, example_id=example_id, model="m", text=text)


def _random_qa(seed, n=300):
    rng = np.random.default_rng(seed)
    examples, responses, refs = {}, [], []
    for i in range(n):
        references = [_random_text(rng) for _ in range(rng.integers(1, 4))]
        examples[f"e{i}"] = _example(f"e{i}", references)
        responses.append(_response(f"r{i}", f"e{i}", _random_text(rng)))
        refs.append(references)
    return examples, responses, refs


def test_token_f1_function_matches_squad_formula_on_random_strings():
    rng = np.random.default_rng(1)
    for _ in range(500):
        a, b = _random_text(rng), _random_text(rng)
        assert token_f1(a, b) == pytest.approx(_squad_f1(a, b), abs=1e-12)


def test_token_f1_labeler_is_max_squad_f1_over_references():
    examples, responses, refs = _random_qa(2)
    labels = labelers.create("token_f1").label(responses, examples)
    checked = 0
    for response, label, references in zip(responses, labels, refs, strict=True):
        if not _squad_tokens(response.text):
            assert label.hallucinated is None and "empty after SQuAD" in label.error
            continue
        if not any(_squad_tokens(r) for r in references):
            assert label.hallucinated is None and "every reference is empty" in label.error
            continue
        best = max(_squad_f1(response.text, r) for r in references)
        assert label.score == pytest.approx(1 - best, abs=1e-12)
        assert label.hallucinated is (best < 0.5)
        checked += 1
    assert checked > 200


def test_exact_match_labeler_matches_normalised_equality_on_random_strings():
    examples, responses, refs = _random_qa(3)
    # Make some responses exact matches up to case, articles and punctuation.
    rng = np.random.default_rng(3)
    for k in rng.choice(len(responses), size=60, replace=False):
        responses[k] = _response(f"r{k}", f"e{k}", "The " + refs[k][0].upper() + "!")
    labels = labelers.create("exact_match").label(responses, examples)
    matches = 0
    for response, label, references in zip(responses, labels, refs, strict=True):
        if not _squad_tokens(response.text):
            assert label.hallucinated is None
            continue
        match = any(_squad_tokens(response.text) == _squad_tokens(r) for r in references)
        assert label.score == (0.0 if match else 1.0)
        assert label.hallucinated is (not match)
        matches += match
    assert matches >= 50


def test_knowledge_f1_is_squad_f1_against_the_context():
    context = "The Eiffel Tower is in Paris and was built in 1889."
    examples = {"e": _example("e", context=context), "none": _example("none")}
    responses = [
        _response("r1", "e", "The Eiffel Tower is in Paris."),
        _response("r2", "e", "Bananas grow well near Quito."),
        _response("r3", "none", "Anything."),
        _response("r4", "e", "..."),
        _response("r5", "gone", "The Eiffel Tower is in Paris."),
    ]
    labels = labelers.create("knowledge_f1").label(responses, examples)
    assert labels[0].score == pytest.approx(1 - _squad_f1(responses[0].text, context))
    assert labels[1].score == pytest.approx(1 - _squad_f1(responses[1].text, context))
    assert labels[0].hallucinated is False and labels[1].hallucinated is True
    assert labels[2].hallucinated is None and "no context" in labels[2].error
    assert labels[3].hallucinated is None and "empty" in labels[3].error
    assert labels[4].hallucinated is None and labels[4].error == "example 'gone' was not given"


def test_bleu_labeler_equals_sacrebleu_multi_reference_sentence_bleu():
    rng = np.random.default_rng(4)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "quickly", ".", ","]
    examples, responses, refs = {}, [], []
    for i in range(200):
        references = [" ".join(rng.choice(words, rng.integers(1, 12))) for _ in range(3)]
        examples[f"e{i}"] = _example(f"e{i}", references)
        responses.append(
            _response(f"r{i}", f"e{i}", " ".join(rng.choice(words, rng.integers(1, 12))))
        )
        refs.append(references)
    labels = labelers.create("bleu").label(responses, examples)
    similarities = []
    for response, label, references in zip(responses, labels, refs, strict=True):
        expected = sacrebleu.sentence_bleu(response.text, references).score / 100
        assert label.score == pytest.approx(1 - expected, abs=1e-12)
        assert label.hallucinated is (expected < 0.1)
        similarities.append(expected)
    assert min(similarities) < 0.1 < max(similarities)


@pytest.mark.parametrize("name", ["bleu", "token_f1", "exact_match"])
def test_reference_labelers_report_missing_references_and_empty_responses(name):
    examples = {"e": _example("e", ["Paris"]), "bare": _example("bare")}
    responses = [
        _response("r1", "bare", "Paris"),
        _response("r2", "missing", "Paris"),
        _response("r3", "e", "   "),
        _response("r4", "e", "Paris"),
    ]
    labels = labelers.create(name).label(responses, examples)
    assert [lab.response_id for lab in labels] == ["r1", "r2", "r3", "r4"]
    assert labels[0].hallucinated is None and "no reference" in labels[0].error
    assert labels[1].hallucinated is None and "'missing' was not given" in labels[1].error
    assert labels[2].hallucinated is None and "empty" in labels[2].error
    assert labels[3].hallucinated is False and labels[3].score == pytest.approx(0.0)
    assert all(lab.score is None for lab in labels[:3])


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("token_f1", [False, True]),
        ("token_f1[threshold=0.2]", [False, False]),
        ("exact_match", [True, True]),
        ("exact_match[threshold=0]", [False, False]),
        ("bleu[threshold=0]", [False, False]),
        ("bleu[threshold=1]", [True, True]),
    ],
)
def test_thresholds_flip_labels(key, expected):
    # Token F1 of the two responses: 8/9 and 1/4.
    examples = {"e": _example("e", ["red green blue yellow black"])}
    responses = [
        _response("r1", "e", "red green blue yellow"),
        _response("r2", "e", "red pink grey"),
    ]
    labels = labelers.create_from_key(key).label(responses, examples)
    assert [lab.hallucinated for lab in labels] == expected


@pytest.mark.parametrize("name", ["bleu", "token_f1", "exact_match", "knowledge_f1"])
@pytest.mark.parametrize("threshold", [-0.1, 1.1, "0.5", None])
def test_lexical_labelers_reject_bad_thresholds(name, threshold):
    with pytest.raises(InvalidInputError, match=f"'threshold' parameter of {name} must be a float"):
        labelers.create(name, threshold=threshold)


def test_bleu_with_shared_references_and_repeated_texts_equals_sentence_bleu_exactly():
    """Responses grouped by reference set and text are scored as sentence_bleu scores each."""
    rng = np.random.default_rng(5)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "quickly", ".", ","]
    shared = [
        [" ".join(rng.choice(words, rng.integers(1, 12))) for _ in range(3)] for _ in range(4)
    ]
    texts = [" ".join(rng.choice(words, rng.integers(1, 12))) for _ in range(30)]
    examples, responses, pairs = {}, [], []
    for i in range(300):
        references = shared[i % 4] if i % 5 else shared[i % 4][::-1]  # same set, other order
        examples[f"e{i}"] = _example(f"e{i}", references)
        text = texts[int(rng.integers(0, len(texts)))]
        responses.append(_response(f"r{i}", f"e{i}", text))
        pairs.append((text, references))
    labels = labelers.create("bleu").label(responses, examples)
    for label, (text, references) in zip(labels, pairs, strict=True):
        assert label.score == 1 - sacrebleu.sentence_bleu(text, references).score / 100
