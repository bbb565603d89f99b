"""The critic labeler against a plain transformers pass of a tiny random RoBERTa classifier."""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest
from _tiny_checkpoints import WORDS, build_classifier

from realitycheck.errors import InvalidInputError, MissingDependencyError
from realitycheck.labelers import labelers
from realitycheck.labelers.critic import Critic
from realitycheck.records import Example, Response

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

FAITHCRITIC = {0: "Entailment", 1: "Hallucination"}


@pytest.fixture(scope="module")
def critic_dir(tmp_path_factory):
    return build_classifier(tmp_path_factory.mktemp("tiny-critic"), FAITHCRITIC, seed=3)


def direct(folder, pairs: list[tuple[str, str]]) -> np.ndarray:
    """Each (knowledge, response) pair's softmax, one unpadded float64 pass per pair."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    out = []
    for knowledge, response in pairs:
        enc = tokenizer(knowledge, response, truncation=True, max_length=64, return_tensors="pt")
        with torch.no_grad():
            out.append(torch.softmax(model(**enc).logits[0].double(), dim=-1).numpy())
    return np.array(out)


def _records(seed: int, n: int):
    rng = np.random.default_rng(seed)
    words = lambda k: " ".join(rng.choice(WORDS, size=k))  # noqa: E731
    examples = {
        f"e{i}": Example(example_id=f"e{i}", dataset="t", task="dialogue", context=words(12))
        for i in range(3)
    }
    responses = [
        Response(response_id=f"r{i}", example_id=f"e{i % 3}", model="m", text=words(3 + i))
        for i in range(n)
    ]
    return examples, responses


def test_score_is_the_softmax_probability_of_the_unfaithful_label(critic_dir):
    examples, responses = _records(seed=0, n=9)  # the longest pairs are truncated at 64 tokens
    probs = direct(critic_dir, [(examples[r.example_id].context, r.text) for r in responses])
    threshold = float(np.median(probs[:, 1]))
    lab = labelers.create_from_key(
        f'critic[model="{critic_dir}",threshold={threshold},device=cpu,batch_size=4]'
    )
    labels = lab.label(responses, examples)
    assert [x.response_id for x in labels] == [r.response_id for r in responses]
    for label, p in zip(labels, probs, strict=True):
        assert label.score == pytest.approx(p[1], abs=1e-6)  # P(Hallucination): higher = worse
        assert label.hallucinated is bool(p[1] >= threshold)
        assert label.category == FAITHCRITIC[int(np.argmax(p))]
        shown = dict(part.split("=") for part in label.raw.split())
        assert float(shown["Entailment"]) == pytest.approx(p[0], abs=1e-5)
    assert {x.hallucinated for x in labels} == {True, False}


def test_the_unfaithful_label_is_read_by_name_from_id2label(critic_dir, tmp_path):
    """The same weights with the labels the other way round: the other output is read."""
    swapped = tmp_path / "swapped"
    shutil.copytree(critic_dir, swapped)
    config = json.loads((swapped / "config.json").read_text())
    config["id2label"] = {"0": "hallucination", "1": "ENTAILMENT"}
    config["label2id"] = {"hallucination": 0, "ENTAILMENT": 1}
    (swapped / "config.json").write_text(json.dumps(config))
    examples, responses = _records(seed=1, n=3)
    ours = Critic(model=str(critic_dir), device="cpu").label(responses, examples)
    theirs = Critic(model=str(swapped), device="cpu").label(responses, examples)
    for a, b in zip(ours, theirs, strict=True):
        assert b.score == pytest.approx(1 - a.score, abs=1e-6)  # float32 softmax


@pytest.mark.parametrize("name", ["LABEL_1", "Contradiction", "halluc"])
def test_a_label_the_model_does_not_have_is_refused_naming_its_labels(critic_dir, name):
    examples, responses = _records(seed=2, n=2)
    lab = Critic(model=str(critic_dir), unfaithful=name, device="cpu")
    with pytest.raises(InvalidInputError, match=r"no label named .*'Entailment', 'Hallucination'"):
        lab.label(responses, examples)


def test_a_single_output_model_is_refused(tmp_path):
    folder = build_classifier(tmp_path / "one", {0: "LABEL_0"}, seed=0)
    examples, responses = _records(seed=2, n=1)
    with pytest.raises(InvalidInputError, match=r"has 1 output; critic needs one output per class"):
        Critic(model=str(folder), unfaithful="LABEL_0", device="cpu").label(responses, examples)


def test_missing_knowledge_is_an_error_record_and_loads_nothing():
    examples = {"k": Example(example_id="k", dataset="t", task="dialogue")}
    responses = [Response(response_id="a", example_id="k", model="m", text="it is tall.")]
    (label,) = Critic(model="/no/such/critic", device="cpu").label(responses, examples)
    assert label.hallucinated is None and label.score is None
    assert label.error == "the example has no context"


def test_without_torch_it_names_itself_and_the_hf_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingDependencyError, match=r"^The critic labeler needs the package"):
        Critic(model="m", device="cpu").probabilities([("k", "r")])


def test_the_components_command_lists_the_three_checkpoint_labelers(capsys):
    from realitycheck.cli import main

    assert main(["components"]) == 0
    shown = capsys.readouterr().out
    for name in ("unieval", "q2", "critic"):
        assert f"  {name} " in shown
    assert main(["describe", "critic"]) == 0
    assert "McGill-NLP/roberta-large-faithcritic" in capsys.readouterr().out
