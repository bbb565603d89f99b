"""The ``hf`` backend's ``pairs`` capability: a transformers sequence-pair classifier.

The backend's ``model`` is loaded with ``AutoModelForSequenceClassification``
(once per process and spec), on the backend's device and weight type with
the same rules as generation (:func:`realitycheck.backends.hf.resolve_device`,
:func:`realitycheck.backends.hf.torch_dtype`). The pairs are batched
in order of length (text characters; less padding) and each batch is
tokenised as text pairs (``tokenizer(premises, hypotheses)``, the
tokenizer's own pair template and token type ids), padded, and truncated to
the model's limit (the tokenizer's ``model_max_length``, at most the
config's ``max_position_embeddings``) longest text first. The logits are
taken in float32: a softmax over them gives the class probabilities, or,
for one output, ``sigmoid(logit)`` the consistency score.

The attention is the backend's ``pairs_attn_implementation``: ``auto`` lets
transformers choose, which is SDPA (``torch.nn.functional
.scaled_dot_product_attention``, a fused kernel) where the architecture
supports it and eager otherwise; nothing here reads attention weights. SDPA
and eager compute the same function in a different order of float32
operations: on 256 real RAGTruth QA pairs the entailment probabilities
differ by at most 3e-8 with MiniLM-L6's weights, and by at most 2e-5 on
2-layer BERT/RoBERTa classifiers with random weights of standard deviation
0.5 (sharp, extreme logits). The speed is measured by
``benchmarks/nli_throughput.py`` against sentence-transformers' ``CrossEncoder``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from realitycheck.backends import (
    PAIRS,
    PairScore,
    config_label_names,
    pair_classes,
    pair_score,
)
from realitycheck.backends.hf._torch import batch_error, import_torch, resolve_device, torch_dtype
from realitycheck.errors import InvalidInputError
from realitycheck.params import check_arg

__all__ = ["load_classifier", "max_length", "score_pairs"]


@functools.lru_cache(maxsize=2)
def load_classifier(
    model: str, device: str, dtype: str, attn_implementation: str
) -> tuple[Any, Any]:
    """Load (once per process and spec) a sequence-pair classifier and its tokenizer.

    ``attn_implementation="auto"`` is transformers' own choice (SDPA where
    supported, else eager); any other value is passed as given.

    Raises:
        MissingDependencyError: If torch or transformers is missing.
        InvalidInputError: If the model cannot be loaded as a sequence classifier.
    """
    import_torch()
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    target = resolve_device(device)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
        classifier: Any = AutoModelForSequenceClassification.from_pretrained(
            model,
            dtype=torch_dtype(target, dtype),
            attn_implementation=None if attn_implementation == "auto" else attn_implementation,
        )
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"Cannot load {model!r} as a sequence-pair classifier: {exc}", field="model"
        ) from None
    classifier.to(target).eval()
    return classifier, tokenizer


def max_length(classifier: Any, tokenizer: Any) -> int | None:
    """Return the most tokens a pair may have: the tokenizer's limit, at most the model's."""
    limits = [
        int(v)
        for v in (
            getattr(tokenizer, "model_max_length", None),
            getattr(classifier.config, "max_position_embeddings", None),
        )
        if isinstance(v, int) and 0 < v < 1_000_000
    ]
    return min(limits) if limits else None


def score_pairs(
    pairs: Sequence[tuple[str, str]],
    *,
    labels: Sequence[str] = (),
    model: str,
    device: str,
    dtype: str,
    attn_implementation: str,
    batch_size: int,
) -> list[PairScore]:
    """Score each ``(premise, hypothesis)``; a failed batch becomes error answers.

    ``model`` is loaded as a sequence-pair classifier (:func:`load_classifier`)
    and scores ``batch_size`` pairs per pass.

    Raises:
        InvalidInputError: If the pairs are not pairs of strings, or the
            labels do not fit the model (before any pair is scored).
    """
    check_arg(pairs, PAIRS, name="pairs", owner="hf.score_pairs")
    torch = import_torch()
    classifier, tokenizer = load_classifier(model, device, dtype, attn_implementation)
    classes = pair_classes(model, config_label_names(classifier.config), labels)
    limit = max_length(classifier, tokenizer)
    # Batches of similar lengths pad less; the answers go back to the pairs' order.
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    out: list[PairScore | None] = [None] * len(pairs)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        chunk = [pairs[i] for i in rows]
        try:
            enc = tokenizer(
                [p for p, _ in chunk],
                [h for _, h in chunk],
                padding=True,
                truncation=limit is not None,
                max_length=limit,
                return_tensors="pt",
            ).to(classifier.device)
            with torch.inference_mode():
                logits = classifier(**enc).logits.float()
            probs = torch.sigmoid(logits) if len(classes) == 1 else torch.softmax(logits, dim=-1)
            answers = [pair_score(classes, row) for row in probs.cpu().tolist()]
        except (RuntimeError, ValueError) as exc:
            error = batch_error(torch, exc)
            answers = [PairScore(error=error) for _ in chunk]
        for i, answer in zip(rows, answers, strict=True):
            out[i] = answer
    return [a if a is not None else PairScore(error="not scored") for a in out]
