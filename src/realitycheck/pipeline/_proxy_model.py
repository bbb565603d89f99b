"""A proxy model: a local white-box model that reads answers a run did not generate.

:class:`ProxyModel` names the model and how each response's prompt is
rebuilt; :class:`ProxiedDetector` is a detector scoring through the proxy's
features, with ``proxy`` in its spec. What the proxy measures, and how it is
stored and reused, is :mod:`realitycheck.pipeline._proxy_features`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from realitycheck.backends import Backend, GenerationRequest, require, require_teacher_forcing
from realitycheck.detectors import Detector, RunContext
from realitycheck.errors import InvalidInputError
from realitycheck.records import Example, Response, Score
from realitycheck.store import ResponseBatch, from_texts

__all__ = [
    "PROXY_NEEDS",
    "PromptBuilder",
    "ProxiedDetector",
    "ProxyModel",
    "ProxyView",
    "failure_scores",
    "reads_features",
]

PROXY_NEEDS = frozenset({"logprobs", "entropy", "hidden"})
"""The detector needs a proxy model supplies (the capability of the same name)."""


class PromptBuilder(Protocol):
    """Builds the request generation would have sent for a response (its prompt, as a request).

    ``key`` names how (the plan and the variant rule): it is part of the
    proxy's storage address, so prompts built another way are measured again.
    Raises :class:`~realitycheck.errors.InvalidInputError` for a response
    whose prompt cannot be rebuilt (a task without prompts, retrieved passages).
    """

    key: str

    def __call__(
        self, example: Example, response: Response, examples: Mapping[str, Example]
    ) -> GenerationRequest:
        """Return the request answered by ``response`` (``examples`` holds its demonstrations)."""
        ...


@dataclass(frozen=True, kw_only=True)
class ProxyModel:
    """A local white-box model whose view of each response stands in for missing features.

    Args:
        backend: A backend that reads fixed answers
            (:func:`~realitycheck.backends.require_teacher_forcing`: ``hf``).
        prompt: Builds the prompt each response answers, as generation would
            (the command line passes :mod:`realitycheck.generation`'s prompts).
        hidden_layers: Layers whose hidden-state summaries to store when a
            detector reads hidden states, besides those detectors ask for by
            ``layer``; empty = the model's middle layer (``layer_count() // 2``),
            the layer INSIDE reads, for detectors with ``layer=None``.
        top_logprobs: Alternatives per token to store (0 = none; no detector reads them).
    """

    backend: Backend
    prompt: PromptBuilder
    hidden_layers: tuple[int, ...] = ()
    top_logprobs: int = 0

    def __post_init__(self) -> None:
        if self.top_logprobs < 0 or any(layer < 0 for layer in self.hidden_layers):
            raise InvalidInputError(
                "The 'top_logprobs' and 'hidden_layers' of a ProxyModel must be >= 0. Got "
                f"{self.top_logprobs} and {list(self.hidden_layers)} instead."
            )

    @functools.cached_property
    def spec(self) -> dict[str, Any]:
        """``{model, backend, prompt}``: the backend's model and spec, the prompt builder's key.

        ``model`` is what a report names: "perplexity (proxy: <model>)".
        """
        model = str(getattr(self.backend, "model", "") or self.backend.key)
        return {"model": model, "backend": self.backend.spec, "prompt": self.prompt.key}

    @functools.cached_property
    def table(self) -> str:
        """The run table holding this proxy's features: ``responses.proxy-<12 hex>``."""
        text = json.dumps(
            {
                "backend": self.backend.key,
                "version": self.backend.version,
                "prompt": self.prompt.key,
            },
            sort_keys=True,
        )
        return f"responses.proxy-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"

    def check(self, detectors: Sequence[Detector]) -> None:
        """Fail before any work if the backend cannot supply what ``detectors`` read.

        Raises:
            InvalidInputError: Naming the missing capability (and the backends
                that have it) or that the backend cannot read fixed answers.
        """
        for det in detectors:
            wanted = set(det.needs) & PROXY_NEEDS
            if not wanted:
                continue
            who = f"{det.key} (through the proxy {self.backend.key})"
            require(wanted, self.backend, who=who)
            require_teacher_forcing(self.backend, who=who)


def reads_features(det: Detector) -> bool:
    """Whether ``det`` reads white-box features a proxy model can supply."""
    return bool(set(det.needs) & PROXY_NEEDS)


@dataclass(frozen=True, kw_only=True)
class ProxiedDetector(Detector):
    """A detector that scores responses through a proxy model's features.

    Its key is the detector's (its values are what the detector computes);
    its spec is the detector's plus ``proxy`` (the proxy model's spec), in
    every score it writes and in the run's manifest. Not registered: the
    detect stage wraps a detector in it when it is given a proxy model.
    """

    detector: Detector
    proxy: Mapping[str, Any]

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "needs", self.detector.needs)
        object.__setattr__(self, "batch_rows", self.detector.batch_rows)

    @functools.cached_property
    def key(self) -> str:
        """The detector's key."""
        return self.detector.key

    @property
    def spec(self) -> dict[str, Any]:
        """The detector's spec with ``proxy``: the proxy model that supplied its features."""
        return {**self.detector.spec, "proxy": dict(self.proxy)}

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return the detector's scores, each with this spec."""
        scores = self.detector.score(responses, run)
        return [dataclasses.replace(s, spec=self.spec_json) for s in scores]

    def score_batch(self, batch: ResponseBatch, run: RunContext) -> pa.Table:
        """Return the detector's scores of one batch as a table, each row with this spec."""
        table = self.detector.score_batch(batch, run)
        where = table.schema.get_field_index("spec")
        return table.set_column(where, "spec", from_texts([self.spec_json] * table.num_rows))


@dataclass(frozen=True)
class ProxyView:
    """The stage's responses with the proxy's features, and those it could not measure.

    Attributes:
        responses: The stage's responses table with its ``features`` column
            replaced by the proxy's (``"{}"`` where it failed).
        failures: The error of each response the proxy could not measure, by id.
        proxy: The proxy's spec.
    """

    responses: pa.Table
    failures: Mapping[str, str]
    proxy: Mapping[str, Any]


def failure_scores(det: Detector, response_ids: Sequence[str], view: ProxyView) -> list[Score]:
    """The failed score of each response the proxy could not measure, with its error."""
    return [
        Score(
            response_id=rid,
            detector=det.key,
            value=None,
            error=f"the proxy could not measure the response: {view.failures[rid]}",
            failed=True,
            spec=det.spec_json,
        )
        for rid in response_ids
    ]
