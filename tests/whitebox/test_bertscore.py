"""BERTScore, the labelers and SelfCheck-BERTScore against the ``bert-score`` package.

A tiny BERT (random weights, word-piece vocabulary written here) is saved to a
folder; ``bert_score.score(model_type=FOLDER, num_layers=L)`` loads the same
folder, so both compute BERTScore on the same model and layer.
"""

from __future__ import annotations

import numpy as np
import pytest
from _tiny_bert import LAYERS, build_tiny_bert, sentences

from realitycheck import Example, Response, RunContext
from realitycheck.detectors.selfcheck import SelfCheckBERTScore
from realitycheck.encoders.bertscore import bertscore
from realitycheck.errors import InvalidInputError
from realitycheck.labelers.bertscore import BERTScore, KnowledgeBERTScore


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    return str(build_tiny_bert(tmp_path_factory.mktemp("tiny-bert")))


def _package(candidates, references, model, layer):
    bert_score = pytest.importorskip("bert_score")
    p, r, f = bert_score.score(
        list(candidates), list(references), model_type=model, num_layers=layer, batch_size=7
    )
    return np.stack([p.numpy(), r.numpy(), f.numpy()], axis=1).astype(np.float64)


@pytest.mark.parametrize("layer", [0, 1, LAYERS])
def test_bertscore_equals_the_bert_score_package(tiny_bert, layer):
    candidates, references = sentences(15, seed=1), sentences(15, seed=2)
    mine = bertscore(candidates, [(r,) for r in references], model=tiny_bert, layer=layer)
    np.testing.assert_allclose(
        mine, _package(candidates, references, tiny_bert, layer), rtol=0, atol=1e-6
    )
    if layer == LAYERS:  # -1 is the last layer
        last = bertscore(candidates, [(r,) for r in references], model=tiny_bert, layer=-1)
        np.testing.assert_array_equal(last, mine)


def test_several_references_take_each_measure_at_its_maximum_as_the_package_does(tiny_bert):
    candidates = sentences(6, seed=3)
    references = [tuple(sentences(k + 1, seed=10 + k)) for k in range(6)]
    mine = bertscore(candidates, references, model=tiny_bert, layer=2)
    expected = _package(candidates, [list(r) for r in references], tiny_bert, 2)
    np.testing.assert_allclose(mine, expected, rtol=0, atol=1e-6)


def _examples():
    texts = sentences(8, seed=4)
    examples = {
        f"e{k}": Example(
            example_id=f"e{k}",
            dataset="t",
            task="rag_qa",
            question="what is the capital",
            context=" ".join(texts[k : k + 3]),
            references=(texts[k],),
        )
        for k in range(4)
    }
    answers = sentences(4, seed=5)
    responses = [
        Response(response_id=f"r{k}", example_id=f"e{k}", model="m", text=answers[k])
        for k in range(4)
    ]
    return examples, responses


@pytest.mark.parametrize("measure", ["precision", "recall", "f1"])
def test_labelers_score_one_minus_the_package_value_and_threshold_it(tiny_bert, measure):
    examples, responses = _examples()
    column = {"precision": 0, "recall": 1, "f1": 2}[measure]
    texts = [r.text for r in responses]
    for labeler, others in (
        (BERTScore, [examples[r.example_id].references[0] for r in responses]),
        (KnowledgeBERTScore, [examples[r.example_id].context for r in responses]),
    ):
        expected = _package(texts, others, tiny_bert, LAYERS)[:, column]
        threshold = float(np.median(expected))
        lab = labeler(model=tiny_bert, measure=measure, threshold=threshold)
        labels = lab.label(responses, examples)
        np.testing.assert_allclose([x.score for x in labels], 1 - expected, atol=1e-6)
        assert [x.hallucinated for x in labels] == list(expected < threshold)
        assert all(x.raw.startswith("P=") and " F1=" in x.raw for x in labels)


def test_k_bertscore_thresholds_precision_by_default():
    assert KnowledgeBERTScore().measure == "precision" and BERTScore().measure == "f1"


def test_a_layer_the_model_lacks_fails_before_any_text_is_embedded(
    tiny_bert, tmp_path, monkeypatch
):
    import realitycheck.encoders.bertscore as module

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(module, "load_encoder", refuse)
    examples, responses = _examples()
    with pytest.raises(InvalidInputError, match=r"'layer' parameter of bertscore.*-1\.\.3"):
        BERTScore(model=tiny_bert, layer=LAYERS + 1).label(responses, examples)
    with pytest.raises(InvalidInputError, match=r"selfcheck_bertscore: cannot read the config"):
        SelfCheckBERTScore(model=str(tmp_path), layer=1).score(
            [Response(response_id="x", example_id="e0", model="m", text="a", samples=("b",))],
            RunContext(examples=examples),
        )


def test_selfcheck_bertscore_follows_the_paper_with_package_values(tiny_bert):
    own = sentences(2, seed=6)  # the response's sentences
    samples = [sentences(k + 1, seed=20 + k) for k in range(3)]  # each sample's sentences
    response = Response(
        response_id="r",
        example_id="e",
        model="m",
        text=". ".join(own) + ".",
        samples=tuple(". ".join(s) + "." for s in samples),
    )
    (score,) = SelfCheckBERTScore(model=tiny_bert, layer=2).score([response], RunContext())
    # S(i) = 1 - mean_n max_k F1(r_i, s_k^n); value = mean_i S(i).
    per_sentence = []
    for sentence in own:
        best = []
        for sample in samples:
            cands = [s + "." for s in sample]
            f1 = _package(cands, [sentence + "."] * len(cands), tiny_bert, 2)[:, 2]
            best.append(f1.max())
        per_sentence.append(1 - np.mean(best))
    assert score.error == ""
    assert score.value == pytest.approx(float(np.mean(per_sentence)), abs=1e-6)


def test_selfcheck_bertscore_is_zero_when_every_sample_repeats_the_response(tiny_bert):
    text = "the cat sat on the mat. the dog ran to the river."
    response = Response(response_id="r", example_id="e", model="m", text=text, samples=(text, text))
    (score,) = SelfCheckBERTScore(model=tiny_bert).score([response], RunContext())
    assert score.value == pytest.approx(0.0, abs=1e-6)
