"""GenerationPrompt: the request generation would have sent for a response, for a proxy model.

Each request is compared with the one generation builds itself (the same
template, variant and demonstrations under the ``greedy`` plan), for a
dataset's answer (variant ``default``, read as ``zero_shot``), another
wording, and a few-shot response whose demonstrations its meta names.
"""

from __future__ import annotations

import pytest

from realitycheck.backends import backends
from realitycheck.errors import InvalidInputError
from realitycheck.generation import GenerationPrompt, build_prompt, make_plan
from realitycheck.records import Example, Response

EXAMPLES = {
    f"q{i}": Example(example_id=f"q{i}", dataset="toy", task="qa", question=q, references=(a,))
    for i, (q, a) in enumerate(
        [("Who wrote Hamlet?", "Shakespeare"), ("Capital of France?", "Paris"), ("2+2?", "4")]
    )
}


def _expected(backend, example, variant, demos=()):
    prompt = build_prompt(example, variant, demos=list(demos))
    plan = make_plan("greedy")
    return plan.requests(prompt, task=example.task, capabilities=backend.capabilities).best


@pytest.mark.parametrize(
    ("variant", "meta", "built_as", "demos"),
    [
        ("default", {}, "zero_shot", ()),  # a dataset's answer names no prompt variant
        ("zero_shot@2", {}, "zero_shot@2", ()),
        ("few_shot", {"demos": ["q1", "q2"]}, "few_shot", ("q1", "q2")),
    ],
)
def test_the_request_is_the_one_generation_sends(variant, meta, built_as, demos):
    backend = backends.create("mock")
    prompt = GenerationPrompt(backend)
    example = EXAMPLES["q0"]
    response = Response(
        response_id="r", example_id="q0", model="m", text="x", prompt_variant=variant, meta=meta
    )
    request = prompt(example, response, EXAMPLES)
    assert request == _expected(backend, example, built_as, [EXAMPLES[d] for d in demos])
    assert prompt.key == (
        "generation plan[decoding=greedy,n_samples=0], the response's variant or zero_shot"
    )


def test_a_prompt_that_held_retrieved_passages_is_refused():
    prompt = GenerationPrompt(backends.create("mock"))
    response = Response(
        response_id="r", example_id="q0", model="m", text="x", meta={"passages": ["p1"]}
    )
    with pytest.raises(InvalidInputError, match="retrieved passages, which are not stored"):
        prompt(EXAMPLES["q0"], response, EXAMPLES)
