"""Detectors on the model's hidden states: EigenScore, LogDet and eRank.

They read the hidden-state summaries a white-box backend (``hf``) stores at
generation time, never full tensors: per sequence, ``hidden["last@L{l}"]``
and ``hidden["mean@L{l}"]`` (the last / mean hidden state of the generated
tokens at layer ``l``, 0 = embeddings) and ``hidden["sv@L{l}"]`` (the
singular values ``s_1 >= s_2 >= ...`` of the ``T x d`` matrix ``H`` of the
generated tokens' hidden states at layer ``l`` with each row centred over its
``d`` features, i.e. ``H J_d`` with ``J_d = I_d - 11^T / d``, the centring
LLM-Check uses). The eigenvalues of the Gram matrix ``(H J_d)(H J_d)^T`` are
the ``s_i^2``.

With ``layer=None`` a detector uses the layer the generation stored; when
several were stored, the lower median of them (with the middle and last
layers stored, the middle one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from realitycheck.detectors._base import Detector, RunContext, detector
from realitycheck.detectors._features import hidden_vector, missing, sample_sequences, score_best
from realitycheck.errors import InvalidInputError, MissingFeatureError
from realitycheck.params import Interval, OneOf, OrNone, param
from realitycheck.records import Response, Score

__all__ = ["EffectiveRank", "EigenScore", "LogDet", "effective_rank", "eigenscore", "logdet"]

Pooling = Literal["last", "mean"]
# Declared once, shared by the three detectors.
_LAYER = OrNone(Interval(int, 0))
_ALPHA = Interval(float, 0, closed="neither")


def eigenscore(embeddings: np.ndarray, *, alpha: float = 1e-3) -> float:
    """Return the EigenScore of ``K`` sentence embeddings (rows of a ``K x d`` array).

    ``(1/K) sum_i log(lambda_i)`` over the eigenvalues of ``Z J_d Z^T + alpha I_K``
    (Chen et al., 2024, eq. 5; natural log, no division by ``d``).
    """
    z = np.asarray(embeddings, dtype=np.float64)
    centred = z - z.mean(axis=1, keepdims=True)  # Z J_d: each embedding centred over its features
    gram = centred @ centred.T + alpha * np.eye(z.shape[0])
    return float(np.mean(np.log(np.linalg.eigvalsh(gram))))


def logdet(singular_values: np.ndarray, *, alpha: float = 1e-3) -> float:
    """Return the mean log-determinant ``(1/m) sum_i log(s_i^2 + alpha)`` (LLM-Check's score)."""
    s = np.asarray(singular_values, dtype=np.float64)
    return float(np.mean(np.log(s**2 + alpha)))


def effective_rank(singular_values: np.ndarray) -> float:
    """Return ``exp(-sum_k p_k log p_k)`` with ``p_k = s_k^2 / sum_j s_j^2`` (Roy & Vetterli).

    The ``s_k^2`` are the eigenvalues of the covariance ``Z^T Z`` (Janiak et
    al., appendix F.1); terms with ``p_k = 0`` contribute 0.

    Raises:
        InvalidInputError: If every singular value is 0 (the rank is undefined).
    """
    lam = np.asarray(singular_values, dtype=np.float64) ** 2
    total = lam.sum()
    if not total > 0:
        raise InvalidInputError("The effective rank of an all-zero matrix is undefined.")
    p = lam[lam > 0] / total
    return float(math.exp(-np.sum(p * np.log(p))))


def _best_singular_values(response: Response, layer: int | None) -> np.ndarray:
    best = response.features.get("best") if isinstance(response.features, Mapping) else None
    if not isinstance(best, Mapping):
        raise missing("features of the best answer (features['best'])", "hidden", response)
    return hidden_vector(best, "sv", layer, "the best answer")


@detector("eigenscore")
@dataclass(frozen=True, kw_only=True)
class EigenScore(Detector):
    """EigenScore of the sampled answers' sentence embeddings (Chen et al., 2024, INSIDE).

    The ``K`` samples' embeddings ``z_k`` (``features["samples"][k]["hidden"]``,
    the last generated token's hidden state by default, as in INSIDE, or the
    mean over generated tokens) at one layer (the middle layer in the paper)
    form ``Z`` (``K x d``); with ``J_d = I_d - 11^T / d``,
    ``value = (1/K) sum_i log lambda_i(Z J_d Z^T + alpha I_K)`` (natural log).
    Semantically diverse samples give a larger log-determinant: higher =
    less self-consistent = more likely hallucinated. Samples that generated
    no token are left out; needs at least 2 remaining samples; otherwise, or
    without hidden features, ``value=None``.

    Args:
        layer: Hidden layer (0 = embeddings); ``None`` = the stored one.
        pooling: ``last`` (last generated token) or ``mean`` (mean over tokens).
        alpha: Regulariser added to the diagonal (the paper's ``1e-3``).
    """

    layer: int | None = param(None, _LAYER)
    pooling: Pooling = param("last", OneOf(Pooling))
    alpha: float = param(1e-3, _ALPHA)
    needs: ClassVar[frozenset[str]] = frozenset({"samples", "hidden"})

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        out = []
        for response in responses:
            try:
                seqs = sample_sequences(response)
                # A sample that generated no token (EOS first) has no embedding: it is
                # left out, as LM-Polygraph does, rather than voiding the response.
                rows = [
                    hidden_vector(s, self.pooling, self.layer, f"sample {k}")
                    for k, s in enumerate(seqs)
                    if not ("tokens" in s and len(s["tokens"]) == 0)
                ]
            except MissingFeatureError as exc:
                out.append(self._score(response, None, error=str(exc)))
                continue
            if len(rows) < 2:
                out.append(self._score(response, None, error="EigenScore needs >= 2 samples"))
                continue
            if len({r.shape for r in rows}) != 1 or rows[0].size == 0:
                out.append(
                    self._score(response, None, error="the samples' embeddings differ in size")
                )
                continue
            out.append(self._score(response, eigenscore(np.stack(rows), alpha=self.alpha)))
        return out


@detector("logdet")
@dataclass(frozen=True, kw_only=True)
class LogDet(Detector):
    """Minus the mean log-determinant of the best answer's hidden states (LLM-Check).

    Sriramanan et al. (2024) score one response by
    ``(1/m) log det(Sigma + alpha I) = (1/m) sum_i log(s_i^2 + alpha)`` where
    ``Sigma = (H J_d)(H J_d)^T`` is the Gram matrix of the generated tokens'
    centred hidden states and ``m`` the number of singular values stored
    (``min(T, d)``; equal to LLM-Check's ``m = T`` whenever the answer has no
    more tokens than the hidden size). Janiak et al. read a larger
    log-determinant, like a larger effective rank, as a richer, more grounded
    representation, so this detector returns the **negative**: higher =
    more collapsed hidden states = more likely hallucinated. Range
    ``[-inf, -log(alpha)]``.

    Args:
        layer: Hidden layer (0 = embeddings); ``None`` = the stored one.
        alpha: Regulariser ``alpha`` (LLM-Check's ``1e-3``).
    """

    layer: int | None = param(None, _LAYER)
    alpha: float = param(1e-3, _ALPHA)
    needs: ClassVar[frozenset[str]] = frozenset({"hidden"})

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        return score_best(
            self,
            responses,
            lambda r: _best_singular_values(r, self.layer),
            lambda s: -logdet(s, alpha=self.alpha),
        )


@detector("erank")
@dataclass(frozen=True, kw_only=True)
class EffectiveRank(Detector):
    """Minus the effective rank of the best answer's hidden states (Janiak et al., F.1).

    ``eRank = exp(-sum_k p_k log p_k)`` with ``p_k = lambda_k / sum_j lambda_j``
    and ``lambda_k = s_k^2`` the eigenvalues of the covariance of the
    generated tokens' centred hidden states at one layer (Roy & Vetterli,
    2007). Janiak et al. take a low eRank (a representation collapsed onto
    few directions) as the sign of hallucination and a high one as richer,
    more grounded encoding, so this detector returns ``-eRank``: higher =
    more likely hallucinated. Range ``[-min(T, d), -1]``. A one-token answer
    (all singular values 0) gets ``value=None``.

    Args:
        layer: Hidden layer (0 = embeddings); ``None`` = the stored one.
    """

    layer: int | None = param(None, _LAYER)
    needs: ClassVar[frozenset[str]] = frozenset({"hidden"})

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        return score_best(
            self,
            responses,
            lambda r: _best_singular_values(r, self.layer),
            lambda s: -effective_rank(s),
        )
