"""The ``vllm`` backend's ``pairs`` capability: vLLM's pooling runner.

The classifier's label names are read from its config
(``transformers.AutoConfig``) and checked (:func:`~realitycheck.backends.pair_classes`)
before the engine starts. The engine is a second ``vllm.LLM`` built with
``runner="pooling"`` (vLLM >= 0.10), apart from the generation engine.

* One output (a cross-encoder): ``LLM.score(premises, hypotheses)`` scores
  the i-th premise with the i-th hypothesis; vLLM applies the model's
  activation, a sigmoid for one label, so the score is ``sigmoid(logit)``
  as on ``hf``.
* Several outputs (an NLI classifier): each pair is tokenised here as a text
  pair (truncated, longest text first, to the tokenizer's limit) and sent as
  token ids to ``LLM.classify``, whose ``probs`` are the softmax of the
  logits. Token ids carry no token type: a tokenizer that marks the
  hypothesis with token type 1 (BERT's) is refused, with the advice to use
  the ``hf`` backend, rather than scored differently from ``hf``.

The engine's outputs map to :class:`~realitycheck.backends.PairScore` with
:func:`from_scoring_output` and :func:`from_classification_output`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from realitycheck.backends._base import PairScore
from realitycheck.backends._pairs import (
    PAIRS,
    config_label_names,
    pair_classes,
    pair_score,
)
from realitycheck.errors import InvalidInputError, MissingDependencyError
from realitycheck.params import check_arg

__all__ = [
    "from_classification_output",
    "from_scoring_output",
    "label_names",
    "pooling_engine",
    "score_pairs",
]


def label_names(model: str) -> list[str]:
    """Return the classifier's label names in output order, from its config.

    Raises:
        InvalidInputError: If the config cannot be read.
    """
    try:
        from transformers import AutoConfig
    except ImportError:
        raise MissingDependencyError(
            "transformers", extra="vllm", purpose="The vllm backend's pairs"
        ) from None
    try:
        config = AutoConfig.from_pretrained(model)
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"Cannot read the config of the pair classifier {model!r}: {exc}", field="model"
        ) from None
    return config_label_names(config)


@functools.lru_cache(maxsize=1)
def pooling_engine(
    import_vllm: Callable[[], Any],
    model: str,
    dtype: str,
    tensor_parallel_size: int,
    gpu_memory_utilization: float,
    max_model_len: int | None,
) -> Any:
    """Start (once per process and spec) vLLM's pooling engine on ``model``.

    ``import_vllm`` returns the ``vllm`` module (or fails naming the extra).
    """
    return import_vllm().LLM(
        model=model,
        runner="pooling",
        dtype=dtype,
        tensor_parallel_size=tensor_parallel_size,
        gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=max_model_len,
    )


def from_scoring_output(output: Any, classes: Sequence[str]) -> PairScore:
    """Map a vLLM ``ScoringRequestOutput`` (``.outputs.score``) to a PairScore."""
    return pair_score(classes, [float(output.outputs.score)])


def from_classification_output(output: Any, classes: Sequence[str]) -> PairScore:
    """Map a vLLM ``ClassificationRequestOutput`` (``.outputs.probs``) to a PairScore.

    Raises:
        InvalidInputError: If the engine returned another number of classes.
    """
    probs = [float(p) for p in output.outputs.probs]
    if len(probs) != len(classes):
        raise InvalidInputError(
            f"vLLM returned {len(probs)} class probabilities for a classifier with "
            f"{len(classes)} labels ({list(classes)})."
        )
    return pair_score(classes, probs)


def _token_ids(tokenizer: Any, model: str, premise: str, hypothesis: str) -> list[int]:
    limit = getattr(tokenizer, "model_max_length", None)
    fits = isinstance(limit, int) and 0 < limit < 1_000_000
    enc = tokenizer(premise, hypothesis, truncation=fits, max_length=limit if fits else None)
    if any(enc.get("token_type_ids") or ()):
        raise InvalidInputError(
            f"The pair classifier {model!r} marks the hypothesis with token type ids, which "
            "vLLM's classify cannot take; score it with the hf backend instead.",
            field="model",
        )
    return list(enc["input_ids"])


def score_pairs(
    pairs: Sequence[tuple[str, str]],
    *,
    labels: Sequence[str] = (),
    import_vllm: Callable[[], Any],
    model: str,
    dtype: str,
    tensor_parallel_size: int,
    gpu_memory_utilization: float,
    max_model_len: int | None,
) -> list[PairScore]:
    """Score each ``(premise, hypothesis)``; a failed engine call becomes error answers.

    The engine settings are the backend's (:func:`pooling_engine`).

    Raises:
        InvalidInputError: If the pairs are not pairs of strings, the labels do
            not fit the model (before the engine starts), or the tokenizer
            needs token type ids for a multi-label model (before any pair is scored).
    """
    check_arg(pairs, PAIRS, name="pairs", owner="vllm.score_pairs")
    classes = pair_classes(model, label_names(model), labels)
    llm = pooling_engine(
        import_vllm, model, dtype, tensor_parallel_size, gpu_memory_utilization, max_model_len
    )
    if not pairs:
        return []
    try:
        if len(classes) == 1:
            outputs = llm.score([p for p, _ in pairs], [h for _, h in pairs], use_tqdm=False)
            return [from_scoring_output(o, classes) for o in outputs]
        tokenizer = llm.get_tokenizer()
        prompts = [{"prompt_token_ids": _token_ids(tokenizer, model, p, h)} for p, h in pairs]
        outputs = llm.classify(prompts, use_tqdm=False)
        return [from_classification_output(o, classes) for o in outputs]
    except (RuntimeError, ValueError) as exc:
        if isinstance(exc, InvalidInputError):
            raise
        return [PairScore(error=f"{type(exc).__name__}: {exc}") for _ in pairs]
