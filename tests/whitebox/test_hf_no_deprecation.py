"""The ``hf`` backend speaks transformers' current API: no deprecation warning reaches the user.

transformers 5.24 renamed the key/value cache from ``past_key_values`` to
``cache`` (argument and output field); the old names still work but warn,
through ``warnings`` (a ``FutureWarning`` from the forward's decorator) and
through the ``transformers`` logger (``warning_once``). Both are turned into
failures here while the tiny Llama decodes (greedy, seeded sampling, beam,
unseeded sampling), reads fixed answers and scores continuations, including
the shared-context path. A model with the older names (transformers < 5.24,
emulated by a wrapper) gets the same numbers, bit for bit.
"""

from __future__ import annotations

import logging
import warnings
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from realitycheck.backends import GenerationRequest
from realitycheck.backends.hf._forward import cache_keyword, padded
from realitycheck.backends.hf._prefix import shared_context_logliks
from realitycheck.backends.hf._sampling import decode

torch = pytest.importorskip("torch")

from tests.whitebox.conftest import mcq_pairs  # noqa: E402

PROMPTS = ["the cat sat on", "who is the king of", "one two three"]


@contextmanager
def no_deprecation(caplog):
    """Deprecation warnings raise; afterwards no ``transformers`` log record says "deprecated".

    ``warning_once`` remembers what it said (an earlier test may have said
    it), so its memory is cleared first; the library's logger does not
    propagate to the root, so the capturing handler is attached to it. (The
    warning filters are set here, in the test's body: pytest resets them
    between a fixture's setup and the test.)
    """
    from transformers.utils import logging as hf_logging

    hf_logging.warning_once.cache_clear()
    logger = logging.getLogger("transformers")
    logger.addHandler(caplog.handler)
    caplog.set_level(logging.WARNING, logger="transformers")
    try:
        with warnings.catch_warnings():
            for category in (FutureWarning, DeprecationWarning):
                warnings.filterwarnings("error", r".*deprecat", category)
            yield
    finally:
        logger.removeHandler(caplog.handler)
    said = [r.getMessage() for r in caplog.records if r.name.startswith("transformers")]
    assert not [m for m in said if "deprecat" in m.lower()], said


def _requests(**settings):
    return [GenerationRequest(prompt=p, max_tokens=6, **settings) for p in PROMPTS]


def test_the_current_transformers_takes_the_cache_as_cache(reference):
    model, _ = reference
    transformers = pytest.importorskip("transformers")
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    if (major, minor) < (5, 24):
        pytest.skip("transformers before 5.24 names the cache past_key_values")
    assert cache_keyword(model) == "cache"


def test_generating_and_scoring_print_no_deprecation(hf, caplog):
    pairs = mcq_pairs(2, contexts=3, context_words=4, options=3, option_words=2)
    with no_deprecation(caplog):
        answers = hf.generate(
            _requests(logprobs=True, top_logprobs=2, hidden_layers=(1,))
            + _requests(decoding="sampling", temperature=1.0, n=2, seed=7, logprobs=True)
            + _requests(decoding="beam", n=2)
            + _requests(decoding="sampling", temperature=1.0)
        )
        forced = hf.teacher_force(_requests(logprobs=True), ["the dog", "a king", "four"])
        scores = hf.loglik_tokens(pairs)
    assert all(not g.error and g.texts for g in answers), [g.error for g in answers]
    assert all(not g.error and g.token_logprobs for g in forced)
    assert len(scores) == len(pairs) and all(scores)


class _OldNames:
    """The tiny Llama behind transformers < 5.24's names: ``past_key_values`` in and out."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0

    @property
    def device(self):
        return self.inner.device

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        position_ids=None,
        past_key_values=None,
        use_cache=None,
        logits_to_keep=0,
        output_hidden_states=None,
    ):
        self.calls += 1
        out = self.inner(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            cache=past_key_values,
            use_cache=use_cache,
            logits_to_keep=logits_to_keep,
            output_hidden_states=output_hidden_states,
        )
        return SimpleNamespace(
            logits=out.logits, past_key_values=out.cache, hidden_states=out.hidden_states
        )

    __call__ = forward


def test_a_model_with_the_old_names_gets_the_same_numbers(reference, caplog):
    model, tokenizer = reference
    if cache_keyword(model) != "cache":
        pytest.skip("this transformers names the cache past_key_values")
    old = _OldNames(model)
    assert cache_keyword(old) == "past_key_values"
    pad_id = int(tokenizer.pad_token_id)
    ids, mask = padded([tokenizer(p)["input_ids"] for p in PROMPTS], pad_id, left=True)
    eos = {int(tokenizer.eos_token_id)}
    for settings in (
        {"logprobs": True, "hidden_layers": (2,)},
        {"decoding": "sampling", "temperature": 1.0, "n": 3, "seed": 5, "logprobs": True},
    ):
        requests = _requests(**settings)
        with no_deprecation(caplog):
            new_way = decode(model, ids, mask, requests, eos=eos, pad_id=pad_id)
        old_way = decode(old, ids, mask, requests, eos=eos, pad_id=pad_id)
        assert torch.equal(new_way.tokens, old_way.tokens)
        assert torch.equal(new_way.logprobs, old_way.logprobs)
        assert all(torch.equal(new_way.hidden[k], old_way.hidden[k]) for k in new_way.hidden)
    calls = old.calls
    assert calls > 2  # the cache went round the decoding loop

    pairs = mcq_pairs(4, contexts=4, context_words=5, options=4, option_words=3)
    contexts = [tokenizer(c)["input_ids"] for c, _ in pairs]
    wholes = [tokenizer(c + o)["input_ids"] for c, o in pairs]
    continuations = [w[len(c) :] for c, w in zip(contexts, wholes, strict=True)]
    kwargs = {"pad_id": pad_id, "batch_size": 5}
    with no_deprecation(caplog):
        new_scores = shared_context_logliks(model, contexts, continuations, **kwargs)
    old_scores = shared_context_logliks(old, contexts, continuations, **kwargs)
    assert new_scores == old_scores and any(new_scores)
    assert old.calls > calls
