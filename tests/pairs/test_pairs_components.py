"""nli, nli_grounding, cross_encoder, claim_check and semantic entropy on tiny classifiers.

Every value is checked against the component's stated rule computed here from
a plain transformers forward pass of each (premise, hypothesis) pair.
"""

from __future__ import annotations

import numpy as np
import pytest

from realitycheck import Example, Response, RunContext
from realitycheck.backends import CallCache
from realitycheck.detectors import detectors
from realitycheck.detectors.pair_grounding import word_windows
from realitycheck.errors import InvalidInputError
from realitycheck.labelers import labelers
from realitycheck.text import split_sentences

torch = pytest.importorskip("torch")

SOURCE = (
    "The Eiffel Tower is in Paris. It was completed in 1889. The tower is 330 metres tall. "
    "It was designed by the company of Gustave. Rome is the capital of Italy. "
    "London is a city of the king and the queen."
)
EXAMPLES = {
    "e1": Example(
        example_id="e1",
        dataset="t",
        task="rag_qa",
        question="When was the tower completed?",
        context=SOURCE,
        references=("It was completed in 1889.", "The tower was completed in 1889"),
    ),
    "e2": Example(example_id="e2", dataset="t", task="qa", question="Where is Rome?"),
}
TEXTS = [
    "The tower was completed in 1889. It is in Paris.",
    "The tower is in Rome. It was built in 1642 by the queen.",
    "London is the capital of France.",
    "It is 330 metres tall.",
]
RESPONSES = [
    Response(response_id=f"r{i}", example_id="e1", model="m", text=t) for i, t in enumerate(TEXTS)
]


@pytest.fixture(scope="module")
def entail(tiny_nli_dir, tiny_consistency_dir):
    """Return P(entailment) (NLI model) or sigmoid(logit) (consistency model) of one pair."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    models = {}
    for kind, folder in (("nli", tiny_nli_dir), ("consistency", tiny_consistency_dir)):
        models[kind] = (
            AutoModelForSequenceClassification.from_pretrained(folder).eval(),
            AutoTokenizer.from_pretrained(folder),
        )

    def run(kind, premise, hypothesis, top=False):
        model, tokenizer = models[kind]
        enc = tokenizer(premise, hypothesis, truncation=True, max_length=128, return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits[0].double()
        if top:  # whether the most probable class is ENTAILMENT
            return int(logits.argmax()) == 2
        if kind == "consistency":
            return float(torch.sigmoid(logits)[0])
        return float(torch.softmax(logits, dim=0)[2])  # ENTAILMENT is label 2

    return run


def _hf(folder, **extra):
    return {"name": "hf", "params": {"model": str(folder), "device": "cpu", **extra}}


def _windows(text, window, stride):
    """Word windows written plainly: starts 0, stride, ...; one more ending at the last word."""
    tokens = text.split()
    if len(tokens) <= window:
        return [" ".join(tokens)]
    out, start = [], 0
    while start + window <= len(tokens):
        out.append(" ".join(tokens[start : start + window]))
        start += stride
    if not out[-1].endswith(tokens[-1]) or len(out[-1].split()) < window:
        out.append(" ".join(tokens[-window:]))
    return out


@pytest.mark.parametrize(("window", "stride"), [(5, 5), (5, 3), (7, 2), (100, 50), (3, 1)])
def test_word_windows_cover_every_word_with_windows_of_the_stated_size(window, stride):
    text = " ".join(f"w{i}" for i in range(23))
    got = word_windows(text, window, stride)
    assert got == _windows(text, window, stride)
    assert all(len(w.split()) == min(window, 23) for w in got)
    assert {t for w in got for t in w.split()} == set(text.split())
    assert word_windows("", window, stride) == []


@pytest.mark.parametrize("chunk", [1, 2])
def test_nli_grounding_is_one_minus_the_least_entailed_sentence(tiny_nli_dir, entail, chunk):
    det = detectors.create(
        "nli_grounding", judge=_hf(tiny_nli_dir, batch_size=4), chunk_sentences=chunk
    )
    scores = det.score(RESPONSES, RunContext(examples=EXAMPLES))
    sentences = split_sentences(SOURCE)
    chunks = [" ".join(sentences[i : i + chunk]) for i in range(0, len(sentences), chunk)]
    for response, score in zip(RESPONSES, scores, strict=True):
        support = [max(entail("nli", c, s) for c in chunks) for s in split_sentences(response.text)]
        assert score.value == pytest.approx(1 - min(support), abs=1e-6)
        assert score.detector == det.key and not score.error
    assert len({round(s.value, 4) for s in scores}) > 1


def test_cross_encoder_takes_the_best_window_of_a_single_logit_model(tiny_consistency_dir, entail):
    det = detectors.create("cross_encoder", judge=_hf(tiny_consistency_dir), window=12, stride=8)
    scores = det.score(RESPONSES, RunContext(examples=EXAMPLES))
    windows = _windows(SOURCE, 12, 8)
    assert len(windows) > 3
    for response, score in zip(RESPONSES, scores, strict=True):
        best = max(entail("consistency", w, response.text) for w in windows)
        assert score.value == pytest.approx(1 - best, abs=1e-6)


def test_claim_check_is_the_weakest_sentence_against_windows(tiny_nli_dir, entail):
    det = detectors.create("claim_check", judge=_hf(tiny_nli_dir), window=10, stride=10)
    scores = det.score(RESPONSES, RunContext(examples=EXAMPLES))
    windows = _windows(SOURCE, 10, 10)
    for response, score in zip(RESPONSES, scores, strict=True):
        claims = split_sentences(response.text)
        support = [max(entail("nli", w, c) for w in windows) for c in claims]
        assert score.value == pytest.approx(1 - min(support), abs=1e-6)


@pytest.mark.parametrize("premise", ["response", "reference", "both"])
def test_nli_labeler_thresholds_the_best_reference(tiny_nli_dir, entail, premise):
    lab = labelers.create("nli", judge=_hf(tiny_nli_dir), premise=premise, threshold=0.3)
    labels = lab.label(RESPONSES, EXAMPLES)
    refs = EXAMPLES["e1"].references
    for response, label in zip(RESPONSES, labels, strict=True):
        per_ref = []
        for r in refs:
            forward = entail("nli", response.text, r)
            backward = entail("nli", r, response.text)
            per_ref.append({"response": forward, "reference": backward}.get(
                premise, min(forward, backward)))  # fmt: skip
        e = max(per_ref)
        assert label.score == pytest.approx(1 - e, abs=1e-6)
        assert label.hallucinated is (e < 0.3)
        assert label.category in ({"correct"} if e >= 0.3 else {"incorrect", "contradiction"})
        assert f"entailment={e:.4f}" in label.raw


def test_missing_inputs_are_errors_not_values(tiny_nli_dir):
    empty = Response(response_id="x", example_id="e1", model="m", text="  ")
    no_context = Response(response_id="y", example_id="e2", model="m", text="Rome.")
    unknown = Response(response_id="z", example_id="nope", model="m", text="Rome.")
    det = detectors.create("claim_check", judge="mock")
    got = det.score([empty, no_context, unknown], RunContext(examples=EXAMPLES))
    assert [s.value for s in got] == [None, None, None]
    assert [s.error for s in got] == [
        "the response is empty",
        "the example has no context",
        "example 'nope' was not given",
    ]
    (label,) = labelers.create("nli", judge="mock").label([no_context], EXAMPLES)
    assert label.hallucinated is None and "no reference" in label.error


def test_a_classifier_failure_is_an_error_per_response():
    det = detectors.create("nli_grounding", judge="mock[fail_on=Rome]")
    good, bad = det.score(RESPONSES[2:4], RunContext(examples=EXAMPLES))  # the source names Rome
    assert good.value is None and "the classifier failed: FatalBackendError" in good.error
    assert bad.value is None
    assert good.failed and bad.failed  # a call that never succeeded fails the stage (exit 3)
    (label,) = labelers.create("nli", judge="mock[fail_on=.]").label(RESPONSES[2:3], EXAMPLES)
    assert label.hallucinated is None and label.failed
    assert "the classifier failed" in label.error
    sentences = Response(
        response_id="s", example_id="e1", model="m", text="Rome.", samples=("Rome is big.",)
    )
    (score,) = detectors.create("selfcheck_nli", judge="mock[fail_on=.]").score(
        [sentences], RunContext(examples=EXAMPLES)
    )
    assert score.value is None and score.failed and "the classifier failed" in score.error


def test_a_missing_input_is_not_a_failure():
    empty = Response(response_id="x", example_id="e1", model="m", text="  ")
    (score,) = detectors.create("nli_grounding", judge="mock").score(
        [empty], RunContext(examples=EXAMPLES)
    )
    assert score.value is None and not score.failed


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("nli_grounding", {}, "missing 1 required .* 'judge'"),
        ("nli_grounding", {"judge": "openai[model=m]"}, "'pairs' capability"),
        ("cross_encoder", {"judge": "mock", "window": 4, "stride": 5}, "'stride' parameter"),
        ("claim_check", {"judge": "mock", "window": 0}, "'window' parameter"),
        ("claim_check", {"judge": "mock", "labels": ["entailment", 3]}, "'labels' parameter"),
    ],
)
def test_detectors_refuse_bad_parameters(name, params, match):
    with pytest.raises(InvalidInputError, match=match):
        detectors.create(name, **params)


def test_nli_labeler_refuses_bad_parameters():
    with pytest.raises(InvalidInputError, match="'premise' parameter"):
        labelers.create("nli", judge="mock", premise="hypothesis")
    with pytest.raises(InvalidInputError, match="missing 1 required .* 'judge'"):
        labelers.create("nli")


def test_bad_label_names_fail_before_any_pair_is_scored(relabelled, pairs_scored, monkeypatch):
    from realitycheck.backends.hf import _pairs as _hf_pairs

    forwards = []
    original = _hf_pairs.pair_score
    monkeypatch.setattr(_hf_pairs, "pair_score", lambda *a: forwards.append(1) or original(*a))
    det = detectors.create("nli_grounding", judge=_hf(relabelled(["x", "y", "z"])))
    with pytest.raises(InvalidInputError, match=r"relabelled.*\['x', 'y', 'z'\]"):
        det.score(RESPONSES, RunContext(examples=EXAMPLES))
    assert forwards == []
    wrong_count = detectors.create(
        "nli_grounding", judge=_hf(relabelled(["x", "y", "z"])), labels=("entailment", "x")
    )
    with pytest.raises(InvalidInputError, match="has 3 outputs, but 2 labels were declared"):
        wrong_count.score(RESPONSES, RunContext(examples=EXAMPLES))


def test_a_rerun_through_the_cache_scores_no_pair(tmp_path, tiny_nli_dir, pairs_scored):
    cache = CallCache(tmp_path / "calls.sqlite")
    det = detectors.create("claim_check", judge=_hf(tiny_nli_dir), window=10, stride=5)
    first = det.score(RESPONSES, RunContext(examples=EXAMPLES, cache=cache))
    assert sum(pairs_scored) > 0
    before = list(pairs_scored)
    again = det.score(RESPONSES[::-1], RunContext(examples=EXAMPLES, cache=cache))
    assert pairs_scored == before
    assert {s.response_id: s.value for s in again} == {s.response_id: s.value for s in first}


def test_semantic_entropy_runs_end_to_end_on_a_tiny_nli_model(
    tmp_path, tiny_nli_dir, entail, pairs_scored
):
    samples = ["paris", "the capital of france", "paris", "rome", "it is rome", "london city"]
    response = Response(
        response_id="s",
        example_id="e1",
        model="m",
        text="paris",
        samples=tuple(samples),
    )
    key = f"semantic_entropy[equivalence=nli,judge=hf[model={tiny_nli_dir},device=cpu]]"
    det = detectors.create_from_key(key)
    cache = CallCache(tmp_path / "calls.sqlite")
    (score,) = det.score([response], RunContext(examples=EXAMPLES, cache=cache))

    classes, firsts = [], []
    for text in samples:
        for c, first in enumerate(firsts):
            if text == first or (
                entail("nli", text, first, top=True) and entail("nli", first, text, top=True)
            ):
                classes.append(c)
                break
        else:
            firsts.append(text)
            classes.append(len(firsts) - 1)
    p = np.bincount(classes) / len(classes)
    assert 1 < len(p) < len(samples)  # some answers share a meaning, not all
    assert score.error == ""
    assert score.value == pytest.approx(float(-(p * np.log(p)).sum()), abs=1e-9)
    calls = sum(pairs_scored)
    assert calls > 0
    det.score([response], RunContext(examples=EXAMPLES, cache=cache))
    assert sum(pairs_scored) == calls  # the rerun is served by the cache
