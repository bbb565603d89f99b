"""P(True) and Surprisal on a tiny causal LM, against a direct transformers forward pass.

The model is a 2-layer Llama with random weights over a word-level vocabulary
that holds "Yes", "yes", "No" and "no", so the probability of yes is a real
number to compare; the alternatives requested cover the whole vocabulary, so
nothing is cut by top-k.
"""

from __future__ import annotations

import numpy as np
import pytest

from realitycheck import Example, Response, RunContext
from realitycheck.backends import CallCache
from realitycheck.backends.hf import HFBackend
from realitycheck.detectors._backend_calls import load_prompt
from realitycheck.detectors.self_evaluation import PROMPT, PTrue, Surprisal
from realitycheck.errors import InvalidInputError

torch = pytest.importorskip("torch")

WORDS = (
    "Yes yes No no Reply: Question: Proposed answer: Is the proposed answer correct? with or "
    "only. Here is a question and an someone for it. where who what capital city river paris "
    "london rome king queen lives in on near of is was"
).split()
QUESTIONS = ["where is the capital city", "who lives in rome", "what is near the river"]
ANSWERS = ["paris is the capital", "the king", "london", "the queen lives near rome"]


@pytest.fixture(scope="module")
def lm_dir(tmp_path_factory):
    from tests.whitebox.conftest import random_llama
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["<unk>", "<pad>", "<s>", "</s>", *dict.fromkeys(WORDS)])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", vocab["<s>"])]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
    )
    model = random_llama(tokenizer, layers=2, max_positions=128, initializer_range=0.5, seed=1)
    folder = tmp_path_factory.mktemp("yes-no-llama")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def direct(lm_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(lm_dir, attn_implementation="eager").eval()
    return model, AutoTokenizer.from_pretrained(lm_dir)


def _data():
    examples = {
        f"e{k}": Example(example_id=f"e{k}", dataset="t", task="qa", question=q)
        for k, q in enumerate(QUESTIONS)
    }
    responses = [
        Response(response_id=f"r{k}", example_id=f"e{k % 3}", model="m", text=a)
        for k, a in enumerate(ANSWERS)
    ]
    return examples, responses


def _forward(direct, text):
    model, tokenizer = direct
    ids = torch.tensor([tokenizer(text)["input_ids"]])
    with torch.no_grad():
        return model(input_ids=ids, output_hidden_states=True)


def test_p_true_is_the_next_token_probability_of_yes(lm_dir, direct, tmp_path, hf_sent):
    _, tokenizer = direct
    backend = HFBackend(model=str(lm_dir), device="cpu")
    examples, responses = _data()
    detector = PTrue(judge=backend, top_logprobs=len(tokenizer))
    with CallCache(tmp_path / "calls.sqlite") as cache:
        scores = detector.score(responses, RunContext(examples=examples, cache=cache))
        sent = sum(hf_sent)
        again = detector.score(responses, RunContext(examples=examples, cache=cache))
    assert sent == len(responses) and sum(hf_sent) == sent  # the rerun asked nothing
    assert again == scores
    yes = [tokenizer.convert_tokens_to_ids(t) for t in ("Yes", "yes")]
    no = [tokenizer.convert_tokens_to_ids(t) for t in ("No", "no")]
    for response, score in zip(responses, scores, strict=True):
        question = examples[response.example_id].question
        prompt = load_prompt(PROMPT).substitute(question=question, answer=response.text)
        p = torch.softmax(_forward(direct, prompt).logits[0, -1].double(), dim=-1)
        p_yes, p_no = float(p[yes].sum()), float(p[no].sum())
        assert 0 < p_yes < 1
        assert score.error == "" and score.value == pytest.approx(1 - p_yes, abs=1e-5)
        (normalized,) = PTrue(judge=backend, top_logprobs=len(tokenizer), normalize=True).score(
            [response], RunContext(examples=examples)
        )
        assert normalized.value == pytest.approx(1 - p_yes / (p_yes + p_no), abs=1e-5)


def test_surprisal_is_one_minus_the_cosine_of_final_last_token_states(lm_dir, direct, tmp_path):
    backend = HFBackend(model=str(lm_dir), device="cpu", batch_size=2)
    examples, responses = _data()
    with CallCache(tmp_path / "calls.sqlite") as cache:
        scores = Surprisal(judge=backend).score(
            responses, RunContext(examples=examples, cache=cache)
        )
        first = Surprisal(judge=backend, layer=1).score(responses, RunContext(examples=examples))
        calls = []
        original = HFBackend.last_hidden

        def counted(self, texts, *, layer=-1):
            calls.append(len(texts))
            return original(self, texts, layer=layer)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(HFBackend, "last_hidden", counted)
            run = RunContext(examples=examples, cache=cache)
            again = Surprisal(judge=backend).score(responses, run)
    assert again == scores and calls == []
    for response, score, at_one in zip(responses, scores, first, strict=True):
        question = examples[response.example_id].question
        expected = []
        for layer in (-1, 1):
            q = _forward(direct, question).hidden_states[layer][0, -1].double()
            a = _forward(direct, f"{question} {response.text}").hidden_states[layer][0, -1].double()
            expected.append(1 - float(q @ a / (q.norm() * a.norm())))
        assert score.value == pytest.approx(expected[0], abs=1e-5)
        assert at_one.value == pytest.approx(expected[1], abs=1e-5)
        assert 0 <= score.value <= 2


def test_the_last_layer_is_the_output_after_the_final_norm(lm_dir, direct):
    model, tokenizer = direct
    (vector,) = HFBackend(model=str(lm_dir), device="cpu").last_hidden(["who lives in rome"])
    ids = torch.tensor([tokenizer("who lives in rome")["input_ids"]])
    with torch.no_grad():
        final = model.model(input_ids=ids).last_hidden_state[0, -1]
    np.testing.assert_allclose(vector, final.numpy(), atol=1e-5)


def test_a_layer_the_model_lacks_is_refused(lm_dir):
    examples, responses = _data()
    with pytest.raises(InvalidInputError, match=r"'layer' of last_hidden must be in -1\.\.2"):
        Surprisal(judge=HFBackend(model=str(lm_dir), device="cpu"), layer=3).score(
            responses, RunContext(examples=examples)
        )
