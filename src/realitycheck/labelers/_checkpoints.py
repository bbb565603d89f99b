"""What the labelers that run a published checkpoint share: loading it, and running it in batches.

``unieval``, ``q2`` and ``critic`` each run a fine-tuned transformers model
of their paper (a T5 evaluator, a question generator and an extractive
reader, a sequence classifier) rather than a backend: none of those is a
generation or a sequence-pair call the backends answer. Here, once:

* :func:`load` loads a model and its tokenizer once per process (by kind,
  folder or hub id, and device), in float32 and eval mode, on
  :func:`realitycheck.backends.hf.resolve_device`'s device. torch and
  transformers are imported there, so a missing ``hf`` extra is a
  :class:`~realitycheck.errors.MissingDependencyError` naming the labeler.
* :func:`in_batches` runs a model over items in batches of similar length
  (less padding) and gives each item's result back in the items' order; a
  batch that fails is run again item by item, so only the item that fails
  alone gets a :class:`Failed` with the error, never a default value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from realitycheck.encoders.bertscore import require_torch
from realitycheck.errors import InvalidInputError, RealityCheckError

__all__ = ["Failed", "Kind", "extract_answers", "in_batches", "load", "model_limit"]

Kind = Literal["seq2seq", "classifier", "reader"]
_AUTO = {
    "seq2seq": ("AutoModelForSeq2SeqLM", "an encoder-decoder model"),
    "classifier": ("AutoModelForSequenceClassification", "a sequence classifier"),
    "reader": ("AutoModelForQuestionAnswering", "an extractive question-answering model"),
}

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Failed:
    """An item the model failed on, with the error (``"<type>: <message>"``)."""

    error: str


class _LoadError(Exception):
    """The model could not be loaded (turned into InvalidInputError naming the field)."""


def load(kind: Kind, model: str, device: str, *, owner: str, field: str = "model") -> Any:
    """Return ``(model, tokenizer)`` of the folder or hub id ``model``, loaded once per process.

    Args:
        kind: ``seq2seq`` (``AutoModelForSeq2SeqLM``), ``classifier``
            (``AutoModelForSequenceClassification``) or ``reader``
            (``AutoModelForQuestionAnswering``).
        model: A local folder or a hub id.
        device: ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``…
        owner: The labeler, named by a missing dependency and a failed load.
        field: The labeler's parameter that named the model, for the error.

    Raises:
        MissingDependencyError: If torch or transformers is missing (the ``hf`` extra).
        InvalidInputError: If the model cannot be loaded as that kind of model.
    """
    require_torch(f"The {owner} labeler")
    from realitycheck.backends.hf import resolve_device

    try:
        return _load(kind, model, resolve_device(device))
    except _LoadError as exc:
        raise InvalidInputError(
            f"{owner} cannot load {model!r} as {_AUTO[kind][1]} ({_AUTO[kind][0]}): {exc}",
            field=field,
        ) from None


@functools.lru_cache(maxsize=4)
def _load(kind: Kind, model: str, device: str) -> tuple[Any, Any]:
    import torch
    import transformers
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    auto = getattr(transformers, _AUTO[kind][0])
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(model)
        net = auto.from_pretrained(model, dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise _LoadError(str(exc)) from None
    return net.to(device).eval(), tokenizer


def model_limit(net: Any, tokenizer: Any) -> int | None:
    """Return the most tokens one input may have: the tokenizer's limit, at most the model's.

    ``None`` when neither states one (T5's relative positions have no limit
    of their own, and a tokenizer saved without ``model_max_length`` gives a
    huge number).
    """
    limits = [
        int(v)
        for v in (
            getattr(tokenizer, "model_max_length", None),
            getattr(net.config, "max_position_embeddings", None),
        )
        if isinstance(v, int) and 0 < v < 1_000_000
    ]
    return min(limits) if limits else None


def in_batches(
    items: Sequence[T],
    run: Callable[[list[T]], list[R]],
    *,
    batch_size: int,
    size: Callable[[T], int],
) -> list[R | Failed]:
    """Run ``run`` on batches of ``items`` of similar ``size``; return each item's result in order.

    ``run`` takes a list of items and returns one result per item, in
    order. A batch that raises a runtime error (out of memory, an input
    longer than the model takes) is run again one item at a time, so that
    only the items that fail alone get a :class:`Failed`. Errors that
    realitycheck raises on purpose (a bad parameter) are not caught.
    """
    torch = require_torch("Running a checkpoint")
    order = sorted(range(len(items)), key=lambda i: size(items[i]))
    out: dict[int, R | Failed] = {}
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        done: list[R | Failed] = _run(torch, [items[i] for i in rows], run)
        out.update(zip(rows, done, strict=True))
    return [out[i] for i in range(len(items))]


def _run(torch: Any, chunk: list[T], run: Callable[[list[T]], list[R]]) -> list[R | Failed]:
    try:
        return _checked(run(chunk), len(chunk))
    except RealityCheckError:
        raise
    except (RuntimeError, ValueError, IndexError) as exc:
        if len(chunk) == 1:
            return [Failed(_error(torch, exc))]
    return [r for item in chunk for r in _run(torch, [item], run)]


def _checked(results: list[R], n: int) -> list[R | Failed]:
    if len(results) != n:
        raise RuntimeError(f"the model gave {len(results)} results for {n} inputs")
    return list(results)


def _error(torch: Any, exc: BaseException) -> str:
    """Return ``"<type>: <message>"``; after running out of GPU memory, free the cached blocks."""
    if "out of memory" in str(exc).lower() and torch.cuda.is_available():
        torch.cuda.empty_cache()
    return f"{type(exc).__name__}: {exc}"


def extract_answers(
    net: Any, tokenizer: Any, batch: list[tuple[str, str]], limit: int | None
) -> list[str | None]:
    """Return an extractive reader's answer to each (question, text) pair; ``None`` = no answer.

    The pairs are encoded as the tokenizer writes a text pair (a fast
    tokenizer: its offsets and sequence ids are read), padded, the text cut
    at its end to ``limit`` tokens (``only_second``). The start and the end
    are the arg-maxes of the start and end scores over the real tokens; a
    span that ends before it starts, or that leaves the text (the ``[CLS]``
    no-answer position, the question, a separator), is no answer; else the
    answer is the text's characters under the span.
    """
    import torch

    enc = tokenizer(
        [q for q, _ in batch],
        [t for _, t in batch],
        padding=True,
        truncation="only_second" if limit is not None else False,
        max_length=limit,
        return_offsets_mapping=True,
        return_tensors="pt",
    )
    offsets = enc.pop("offset_mapping").tolist()
    segments = [enc.sequence_ids(i) for i in range(len(batch))]
    enc = enc.to(net.device)
    with torch.inference_mode():
        out = net(**enc)
    padding = enc["attention_mask"] == 0
    starts = out.start_logits.float().masked_fill(padding, float("-inf")).argmax(-1).tolist()
    ends = out.end_logits.float().masked_fill(padding, float("-inf")).argmax(-1).tolist()
    answers: list[str | None] = []
    for i, (_, text) in enumerate(batch):
        s, e = starts[i], ends[i]
        if e < s or any(segments[i][k] != 1 for k in range(s, e + 1)):
            answers.append(None)
        else:
            answers.append(text[offsets[i][s][0] : offsets[i][e][1]])
    return answers
