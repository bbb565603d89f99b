"""The prompt generation would have sent for a response, rebuilt for a proxy model.

A proxy model (:class:`realitycheck.pipeline.ProxyModel`) reads answers a run
did not generate (a dataset's own answers) by teacher-forcing each one after
the prompt it answers. :class:`GenerationPrompt` rebuilds that prompt with this
package's templates, as a request for the proxy's backend; the pipeline takes
it as its ``PromptBuilder`` (it cannot import generation: they share a layer).

>>> prompt = GenerationPrompt(backend)  # doctest: +SKIP
>>> ProxyModel(backend=backend, prompt=prompt)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from realitycheck.backends import Backend, GenerationRequest
from realitycheck.errors import InvalidInputError
from realitycheck.generation._plans import make_plan
from realitycheck.generation._prompts import build_prompt, parse_variant
from realitycheck.records import Example, Response

__all__ = ["GenerationPrompt"]


class GenerationPrompt:
    """The request generation sends for a response, to rebuild it for a proxy model.

    The response's prompt variant (``zero_shot`` when it names none, as a
    dataset's answers do; a few-shot one with the demonstrations its meta
    names; the zero-shot prompt of the question its meta stores as
    ``paraphrase`` for a variant that rewrote it) under the ``greedy`` plan,
    in the format the backend takes (chat or completion, by its capabilities).
    A prompt that held retrieved passages is not rebuilt (the passages' texts
    are not stored).

    Attributes:
        key: How prompts are built (the plan and the variant rule); part of
            the proxy's storage address, so prompts built another way are
            measured again.

    Args:
        backend: The proxy model's backend (its capabilities pick the format).
    """

    def __init__(self, backend: Backend) -> None:
        self._plan = make_plan("greedy")
        self._capabilities = backend.capabilities
        self.key = f"generation {self._plan.key}, the response's variant or zero_shot"

    def __call__(
        self, example: Example, response: Response, examples: Mapping[str, Example]
    ) -> GenerationRequest:
        """Return the request ``response`` answers (``examples``: its demonstrations, by id).

        Raises:
            InvalidInputError: The prompt held retrieved passages, which are not stored.
        """
        try:
            variant = response.prompt_variant
            style, _ = parse_variant(variant)
        except InvalidInputError:
            variant, style = "zero_shot", "zero_shot"
            paraphrase = response.meta.get("paraphrase")
            if isinstance(paraphrase, str) and paraphrase.strip():  # a rewriting variant's
                example = dataclasses.replace(example, question=paraphrase)
        if response.meta.get("passages"):
            raise InvalidInputError("its prompt held retrieved passages, which are not stored")
        demos = [examples[i] for i in response.meta.get("demos", ())] if style == "few_shot" else []
        prompt = build_prompt(example, variant, demos=demos)
        return self._plan.requests(prompt, task=example.task, capabilities=self._capabilities).best
