"""Token-level uncertainty of the model: perplexity, token entropy and LN-entropy.

All three read log-probabilities or entropies that a white-box or
log-prob-capable backend stored at generation time (``response.features``);
they are the logit-based baselines of Janiak et al. (2025, "The Illusion of
Progress"). Every value is in nats-based units and oriented so that higher
means a less confident model, taken as more likely hallucinated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from realitycheck.detectors._base import Detector, RunContext, detector
from realitycheck.detectors._features import best_values, sample_values, score_best
from realitycheck.errors import MissingFeatureError
from realitycheck.records import Response, Score

__all__ = ["LNEntropy", "MeanTokenEntropy", "Perplexity"]


@detector("perplexity")
@dataclass(frozen=True, kw_only=True)
class Perplexity(Detector):
    """Perplexity of the best answer: ``exp(-mean_t log p(y_t | y_<t, x))``.

    Reads ``features["best"]["token_logprobs"]`` (natural-log probabilities of
    the generated tokens under the model). Ren et al. (2023) use it as a
    confidence baseline; higher perplexity = the model was less sure of its
    own answer = more likely hallucinated. Range ``[1, inf)``. A response
    without token log-probabilities, or whose best answer has no token, gets
    ``value=None`` and an error naming the backends that supply log-probs.
    """

    needs: ClassVar[frozenset[str]] = frozenset({"logprobs"})

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        return score_best(
            self,
            responses,
            lambda r: best_values(r, "token_logprobs", "logprobs"),
            lambda lp: math.exp(-float(lp.mean())),
        )


@detector("mean_token_entropy")
@dataclass(frozen=True, kw_only=True)
class MeanTokenEntropy(Detector):
    """Mean entropy of the next-token distributions along the best answer.

    ``value = (1/T) sum_t H(p(. | y_<t, x))`` with ``H`` the entropy of the
    full-vocabulary distribution (nats), read from
    ``features["best"]["token_entropies"]`` (only white-box backends supply
    it). Range ``[0, log |V|]``; higher = flatter distributions = more likely
    hallucinated. Missing entropies or an empty answer give ``value=None``.
    """

    needs: ClassVar[frozenset[str]] = frozenset({"entropy"})

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        return score_best(
            self,
            responses,
            lambda r: best_values(r, "token_entropies", "entropy"),
            lambda h: float(h.mean()),
        )


@detector("ln_entropy")
@dataclass(frozen=True, kw_only=True)
class LNEntropy(Detector):
    """Length-normalised predictive entropy over the samples (Malinin & Gales, 2021).

    The Monte-Carlo estimate over the ``K`` sampled answers::

        value = -(1/K) sum_k (1/T_k) sum_t log p(y_t^k | y_<t^k, x)

    from ``features["samples"][k]["token_logprobs"]``. Samples without any
    token (``T_k = 0``) cannot be length-normalised and are left out; when
    none is left the value is ``None``. Range ``[0, inf)``; higher = the
    model spreads its mass over more, less likely answers = more likely
    hallucinated. The best answer is not one of the samples and is not used.
    """

    needs: ClassVar[frozenset[str]] = frozenset({"samples", "logprobs"})

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        out = []
        for response in responses:
            try:
                per_sample = sample_values(response, "token_logprobs", "logprobs")
            except MissingFeatureError as exc:
                out.append(self._score(response, None, error=str(exc)))
                continue
            means = [float(lp.mean()) for lp in per_sample if lp.size]
            if not means:
                out.append(self._score(response, None, error="every sample is empty"))
                continue
            out.append(self._score(response, -float(np.mean(means))))
        return out
