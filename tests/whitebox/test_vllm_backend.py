"""The vllm backend's pure parts: request → SamplingParams, engine output → Generation.

vLLM itself needs a GPU and is not installed here; the fake outputs mirror
the attribute names of vLLM's ``RequestOutput``, ``CompletionOutput``,
``Logprob`` and ``BeamSearchSequence``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import pytest

from realitycheck.backends import GenerationRequest, backends
from realitycheck.backends.vllm import (
    VLLMBackend,
    beam_kwargs,
    from_beam_sequences,
    from_request_output,
    sampling_kwargs,
    sampling_params,
)
from realitycheck.errors import InvalidInputError, MissingDependencyError


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    prompt_logprobs: list | None
    outputs: list[CompletionOutput]
    finished: bool = True


@dataclass
class BeamSearchSequence:
    tokens: list[int]
    logprobs: list[dict[int, Logprob]] = field(default_factory=list)
    cum_logprob: float = 0.0
    text: str | None = None


VOCAB = {1: "<s>", 2: "</s>", 10: "Paris", 11: " is", 12: " nice", 13: " big", 14: " Rome"}


def decode(ids):
    return "".join(VOCAB[i] for i in ids if i not in (1, 2))


def _step(chosen, alternatives):
    """One position: the chosen token and alternatives as {token_id: logprob}."""
    entries = {tid: Logprob(lp, decoded_token=VOCAB[tid]) for tid, lp in alternatives.items()}
    entries.setdefault(chosen, Logprob(-5.0, decoded_token=VOCAB[chosen]))
    ranked = sorted(entries.items(), key=lambda kv: -kv[1].logprob)
    for rank, (_, entry) in enumerate(ranked, start=1):
        entry.rank = rank
    return entries


def _steps(*rows):
    return [_step(c, alts) for c, alts in rows]


@pytest.mark.parametrize(
    ("request_fields", "expected"),
    [
        ({"decoding": "greedy", "n": 3}, {"n": 1, "temperature": 0.0, "top_k": -1, "top_p": 1.0}),
        (
            {"decoding": "sampling", "n": 4, "temperature": 0.7, "seed": 5},
            {"n": 4, "temperature": 0.7, "top_k": -1, "top_p": 1.0, "seed": 5},
        ),
        ({"decoding": "top_k", "n": 2, "temperature": 1.0}, {"n": 2, "top_k": 40, "top_p": 1.0}),
        ({"decoding": "top_k", "top_k": 5, "temperature": 1.0}, {"top_k": 5}),
        ({"decoding": "top_p", "temperature": 1.0}, {"top_p": 0.95, "top_k": -1}),
        ({"decoding": "top_p", "top_p": 0.5, "temperature": 1.0}, {"top_p": 0.5}),
        ({"decoding": "sampling", "n": 3, "temperature": 0.0}, {"n": 1, "temperature": 0.0}),
        ({"logprobs": True}, {"logprobs": 0}),
        ({"logprobs": True, "top_logprobs": 5}, {"logprobs": 5}),
        ({"stop": ("\n",), "max_tokens": 9}, {"stop": ["\n"], "max_tokens": 9, "logprobs": None}),
    ],
)
def test_sampling_kwargs(request_fields, expected):
    got = sampling_kwargs(GenerationRequest(prompt="q", **request_fields))
    assert {k: got[k] for k in expected} == expected


class _Params:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


def _engine_module(*, new_api):
    """A stand-in for the ``vllm`` module with one of its two guided-decoding APIs."""
    guided = {"StructuredOutputsParams" if new_api else "GuidedDecodingParams": _Params}
    sampling = type("sampling_params", (), guided)
    return type("vllm", (), {"SamplingParams": _Params, "sampling_params": sampling})


@pytest.mark.parametrize(
    ("new_api", "field"), [(True, "structured_outputs"), (False, "guided_decoding")]
)
def test_a_json_schema_becomes_guided_decoding(new_api, field):
    schema = '{"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}}}'
    kwargs = sampling_kwargs(GenerationRequest(prompt="q", json_schema=schema))
    assert kwargs["structured_outputs"] == {"json": json.loads(schema)}
    built = sampling_params(_engine_module(new_api=new_api), kwargs)
    assert built.kwargs[field].kwargs == {"json": json.loads(schema)}
    assert "structured_outputs" not in built.kwargs or new_api
    assert built.kwargs["max_tokens"] == kwargs["max_tokens"]
    plain = sampling_params(
        _engine_module(new_api=new_api), sampling_kwargs(GenerationRequest(prompt="q"))
    )
    assert "structured_outputs" not in plain.kwargs and "guided_decoding" not in plain.kwargs
    assert "json_schema" in VLLMBackend.capabilities


def test_beam_kwargs_and_beam_requests_kept_apart():
    request = GenerationRequest(prompt="q", decoding="beam", num_beams=3, n=5, max_tokens=7)
    assert beam_kwargs(request) == {"beam_width": 5, "max_tokens": 7, "length_penalty": 1.0}
    with pytest.raises(InvalidInputError, match="beam_kwargs"):
        sampling_kwargs(request)


def test_request_output_maps_to_generation_with_logprobs_and_alternatives():
    request = GenerationRequest(prompt="q", n=2, decoding="sampling", temperature=1.0,
                                logprobs=True, top_logprobs=2)  # fmt: skip
    first = CompletionOutput(0, "Paris is nice", [10, 11, 12], -1.5,
                             _steps((10, {10: -0.1, 14: -2.5, 13: -3.0}),
                                    (11, {11: -0.2, 12: -3.0}),
                                    (12, {13: -0.9, 12: -1.2})),
                             finish_reason="stop")  # fmt: skip
    second = CompletionOutput(1, "Rome", [14], -2.5, _steps((14, {10: -0.1, 14: -2.5})),
                              finish_reason="length")  # fmt: skip
    g = from_request_output(RequestOutput("r", None, [1, 5, 6], None, [first, second]),
                            request, decode)  # fmt: skip
    assert g.texts == ("Paris is nice", "Rome")
    assert g.tokens == (("Paris", " is", " nice"), (" Rome",))
    assert g.token_logprobs == ((-0.1, -0.2, -1.2), (-2.5,))
    assert g.top_logprobs[0][0] == {"Paris": -0.1, " Rome": -2.5}
    assert g.top_logprobs[0][2] == {" big": -0.9, " nice": -1.2}
    assert g.finish_reasons == ("stop", "length")
    assert g.usage == {"prompt_tokens": 3, "completion_tokens": 4}
    assert not g.token_entropies and not g.hidden


def test_greedy_output_is_repeated_n_times_and_logprobs_only_when_asked():
    request = GenerationRequest(prompt="q", n=3)
    only = CompletionOutput(0, "Paris", [10], None, None, finish_reason="stop")
    g = from_request_output(RequestOutput("r", None, [1], None, [only]), request, decode)
    assert g.texts == ("Paris",) * 3 and g.tokens == (("Paris",),) * 3
    assert g.token_logprobs == () and g.top_logprobs == ()


def test_missing_decoded_token_falls_back_to_the_tokenizer():
    request = GenerationRequest(prompt="q", logprobs=True)
    steps = [{12: Logprob(-0.4, rank=1, decoded_token=None)}]
    out = CompletionOutput(0, " nice", [12], -0.4, steps)
    g = from_request_output(RequestOutput("r", None, [1], None, [out]), request, decode)
    assert g.tokens == ((" nice",),) and g.token_logprobs == ((-0.4,),)


def test_beam_sequences_drop_the_prompt_and_a_final_eos():
    request = GenerationRequest(prompt="q", decoding="beam", n=2, num_beams=3, logprobs=True)
    beams = [
        BeamSearchSequence(
            [1, 10, 11, 12, 2], _steps((11, {11: -0.3}), (12, {12: -0.4}), (2, {2: -0.1})), -0.8
        ),  # fmt: skip
        BeamSearchSequence([1, 10, 14, 13], _steps((14, {14: -0.9}), (13, {13: -0.5})), -1.4),
        BeamSearchSequence([1, 10, 13, 13], _steps((13, {13: -1.9}), (13, {13: -0.5})), -2.4),
    ]
    g = from_beam_sequences(beams, 2, request, decode, eos_id=2)
    assert g.texts == (" is nice", " Rome big")
    assert g.token_logprobs == ((-0.3, -0.4), (-0.9, -0.5))
    assert g.finish_reasons == ("stop", "length")
    assert math.isclose(sum(g.token_logprobs[0]) + -0.1, beams[0].cum_logprob)
    assert g.usage == {"prompt_tokens": 2, "completion_tokens": 4}


def test_registered_without_white_box_features():
    cls = backends.get("vllm")
    assert {"logprobs", "top_logprobs", "beam", "n", "loglik"} <= cls.capabilities
    assert not {"entropy", "hidden"} & cls.capabilities
    with pytest.raises(InvalidInputError, match="'model' parameter of vllm"):
        VLLMBackend(model="")


def test_missing_vllm_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(MissingDependencyError, match=r"realitycheck\[vllm\]"):
        VLLMBackend(model="some/model").generate([GenerationRequest(prompt="q")])
