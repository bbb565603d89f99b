"""The teacher-forced pass of the ``hf`` backend: what the model thought of its own tokens.

One forward pass over ``prompt + output`` for a batch of sequences gives, for
each generated token, its log-probability under the model (temperature 1,
no truncation: the model's own distribution, not the sampling one), the
entropy of the full next-token distribution (nats), the top-k alternatives,
and, for chosen layers, summaries of the generated tokens' hidden states —
never the full tensors.

Sequences are left-padded so that every sequence's generated tokens end at
the last position; position ids are computed from the attention mask, so a
padded sequence gets the same numbers as the same sequence alone.

The same pass reads answers the model did not generate (a dataset's
human-written answers, another model's outputs): :func:`answer_tokens` splits
prompt + answer into the prompt's tokens and the answer's, :func:`forced_answers`
measures them in batches of similar length, and
:func:`realitycheck.backends.teacher_force` is the public verb, for any backend
that reads fixed answers (``hf``).
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from realitycheck.backends import GenerationRequest, continuation_start
from realitycheck.errors import InvalidInputError

__all__ = [
    "SequenceFeatures",
    "accepts_logits_to_keep",
    "answer_tokens",
    "cache_keyword",
    "forced_answers",
    "forced_features",
    "forward_features",
    "hidden_summary",
    "padded",
    "spelling",
    "step_features",
]


@dataclass
class SequenceFeatures:
    """What the teacher-forced pass measured for one generated sequence."""

    token_logprobs: list[float] = field(default_factory=list)
    token_entropies: list[float] = field(default_factory=list)
    top_logprobs: list[dict[str, float]] = field(default_factory=list)
    hidden: dict[str, list[float]] = field(default_factory=dict)


def hidden_summary(states: Any, layer: int) -> dict[str, list[float]]:
    """Summarise the ``T x d`` hidden states of the generated tokens at ``layer``.

    ``last@L{layer}``: the last token's state; ``mean@L{layer}``: the mean
    over tokens; ``sv@L{layer}``: the singular values (descending) of the
    matrix with each row centred over its ``d`` features (``H J_d``, the
    centring of LLM-Check's hidden score). All empty when ``T = 0``.
    """
    import torch

    h = states.float()
    if h.shape[0] == 0:
        return _empty_summary(layer)
    centred = h - h.mean(dim=1, keepdim=True)
    sv = torch.linalg.svdvals(centred)
    return {
        f"last@L{layer}": h[-1].tolist(),
        f"mean@L{layer}": h.mean(dim=0).tolist(),
        f"sv@L{layer}": sv.tolist(),
    }


def spelling(tokenizer: Any, rows: Sequence[Sequence[int]]) -> dict[int, str]:
    """Return ``{id: tokenizer.decode([id])}`` for every token id in ``rows`` (one call)."""
    ids = sorted({t for row in rows for t in row})
    return dict(zip(ids, tokenizer.batch_decode([[t] for t in ids]), strict=True))


def _spelled(tokenizer: Any, values: list[list[float]], indices: Any) -> list[dict[str, float]]:
    """Return ``{token text: log-prob}`` per position (a text spelled twice keeps its best)."""
    rows = indices.tolist()
    spell = spelling(tokenizer, rows)
    out = []
    for vals, idxs in zip(values, rows, strict=True):
        spelled: dict[str, float] = {}
        for v, t in zip(vals, idxs, strict=True):
            spelled.setdefault(spell[t], v)
        out.append(spelled)
    return out


def _empty_summary(layer: int) -> dict[str, list[float]]:
    return {f"last@L{layer}": [], f"mean@L{layer}": [], f"sv@L{layer}": []}


def accepts_logits_to_keep(model: Any) -> bool:
    """Return whether ``model.forward`` takes ``logits_to_keep`` (logits of the last rows only)."""
    try:
        return "logits_to_keep" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - exotic wrappers
        return False


_CACHE_KEYWORDS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def cache_keyword(model: Any) -> str:
    """Return the name under which ``model.forward`` takes, and returns, its key/value cache.

    transformers 5.24 renamed ``past_key_values`` to ``cache``, both the
    forward argument and the output field; the old names still work there but
    print a deprecation warning (the argument is to go in 5.40). Earlier 5.x
    releases, and remote-code models written for them, know only
    ``past_key_values``. The answer is ``"cache"`` when ``model.forward``'s
    signature has that parameter, else ``"past_key_values"``; it is read once
    per model (a model not weak-referenceable is inspected on every call).
    """
    try:
        return _CACHE_KEYWORDS[model]
    except (KeyError, TypeError):
        pass
    try:
        takes_cache = "cache" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - exotic wrappers
        takes_cache = False
    name = "cache" if takes_cache else "past_key_values"
    try:
        _CACHE_KEYWORDS[model] = name
    except TypeError:  # pragma: no cover - not weak-referenceable
        pass
    return name


def padded(rows: Sequence[Sequence[int]], pad_id: int, *, left: bool) -> tuple[Any, Any]:
    """Return ``(ids, mask)``: the token rows padded to the longest, as CPU long tensors.

    ``ids`` holds ``pad_id`` where a row has no token and ``mask`` 1 at the
    real tokens, 0 at the padding; ``left`` pads before the tokens (they end
    at the last column), else after them. ``rows`` must not be empty.
    """
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        span = slice(width - len(row), width) if left else slice(0, len(row))
        ids[i, span] = torch.tensor(list(row), dtype=torch.long)
        mask[i, span] = 1
    return ids, mask


def forward_features(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Sequence[int]],
    outputs: Sequence[Sequence[int]],
    *,
    pad_id: int,
    entropy: bool = True,
    top_k: int = 0,
    layers: Sequence[int] = (),
) -> list[SequenceFeatures]:
    """Run one batched teacher-forced pass over ``prompts[i] + outputs[i]``.

    Args:
        model: A causal LM in eval mode.
        tokenizer: Its tokenizer (to spell the top-k alternatives).
        prompts: The prompt token ids of each sequence (non-empty).
        outputs: The generated token ids to score after each prompt.
        pad_id: Token id used for padding (masked out).
        entropy: Whether to compute token entropies.
        top_k: How many alternatives per token to return (0 = none).
        layers: Hidden layers to summarise (0 = embeddings).

    Returns:
        One :class:`SequenceFeatures` per sequence, in order.
    """
    import torch

    if not any(outputs):
        empty = {k: v for layer in layers for k, v in _empty_summary(layer).items()}
        return [SequenceFeatures(hidden=dict(empty)) for _ in outputs]
    device = model.device
    gen = max(len(o) for o in outputs)
    sequences = [list(p) + list(o) for p, o in zip(prompts, outputs, strict=True)]
    ids, mask = padded(sequences, pad_id, left=True)
    width = ids.shape[1]
    ids, mask = ids.to(device), mask.to(device)
    positions = (mask.cumsum(dim=-1) - 1).clamp(min=0)
    kwargs: dict[str, Any] = {
        "input_ids": ids,
        "attention_mask": mask,
        "position_ids": positions,
        "use_cache": False,
        "output_hidden_states": bool(layers),
    }
    keep = gen + 1
    if accepts_logits_to_keep(model):
        kwargs["logits_to_keep"] = keep
    with torch.inference_mode():
        result = model(**kwargs)
        # Logits at position t predict token t + 1: the last `gen` tokens are
        # predicted by the `gen` positions before the last one.
        logits = result.logits[:, -keep:-1, :].float()
        logp = torch.log_softmax(logits, dim=-1)
        ent = -(logp.exp() * logp).sum(dim=-1) if entropy else None
        top = logp.topk(min(top_k, logp.shape[-1]), dim=-1) if top_k > 0 else None
        out: list[SequenceFeatures] = []
        for i, o in enumerate(outputs):
            n = len(o)
            feats = SequenceFeatures()
            if n:
                target = torch.tensor(list(o), dtype=torch.long, device=logp.device)
                rows = logp[i, gen - n :]
                feats.token_logprobs = rows.gather(1, target[:, None])[:, 0].tolist()
                if ent is not None:
                    feats.token_entropies = ent[i, gen - n :].tolist()
                if top is not None:
                    feats.top_logprobs = _spelled(
                        tokenizer, top.values[i, gen - n :].tolist(), top.indices[i, gen - n :]
                    )
            for layer in layers:
                states = result.hidden_states[layer][i, width - n :] if n else logp.new_zeros(0, 1)
                feats.hidden.update(hidden_summary(states, layer))
            out.append(feats)
    return out


def step_features(
    tokenizer: Any,
    lengths: Sequence[int],
    *,
    logprobs: Any = None,
    entropies: Any = None,
    top: tuple[Any, Any] | None = None,
    hidden: dict[int, Any] | None = None,
) -> list[SequenceFeatures]:
    """Return the features of each row's first ``lengths[r]`` tokens, read during decoding.

    The inputs are the ``(rows, steps, ...)`` tensors that the decoding loop
    (:func:`realitycheck.backends.hf._sampling.decode`) recorded for each
    drawn token: its log-probability and entropy, the top-k
    ``(values, indices)`` and the hidden states per layer, each ``None`` (or
    absent) when not asked for. The same quantities as :func:`forward_features`
    computes with a teacher-forced pass, up to float rounding.
    """
    lp = logprobs.tolist() if logprobs is not None else None
    ent = entropies.tolist() if entropies is not None else None
    top_values = top[0].tolist() if top is not None else None
    out: list[SequenceFeatures] = []
    for r, n in enumerate(lengths):
        feats = SequenceFeatures()
        if lp is not None and ent is not None:
            feats.token_logprobs, feats.token_entropies = lp[r][:n], ent[r][:n]
        if top is not None and top_values is not None:
            feats.top_logprobs = _spelled(tokenizer, top_values[r][:n], top[1][r, :n])
        for layer, states in (hidden or {}).items():
            if states.shape[1] < n:  # pragma: no cover - the loop reads every kept token
                raise ValueError(f"no hidden state for token {states.shape[1]} of row {r}")
            feats.hidden.update(hidden_summary(states[r, :n], layer))
        out.append(feats)
    return out


def forced_features(
    model: Any,
    tokenizer: Any,
    request: GenerationRequest,
    prompts: Sequence[Sequence[int]],
    outputs: Sequence[Sequence[int]],
    *,
    batch_size: int,
) -> list[SequenceFeatures]:
    """Measure what ``request`` asks of each output: :func:`forward_features`, in batches."""
    features: list[SequenceFeatures] = []
    for s in range(0, len(outputs), batch_size):
        features.extend(
            forward_features(
                model,
                tokenizer,
                prompts[s : s + batch_size],
                outputs[s : s + batch_size],
                pad_id=int(tokenizer.pad_token_id),
                entropy=request.logprobs,
                top_k=request.top_logprobs,
                layers=request.hidden_layers,
            )
        )
    return features


def answer_tokens(
    tokenizer: Any, prompts: Sequence[tuple[str, bool]], answers: Sequence[str]
) -> list[tuple[list[int], list[int]] | str]:
    """Return the prompt's tokens and the answer's tokens of each ``prompt + answer``, or an error.

    ``prompts[i]`` is the text the model sees and whether the tokenizer adds
    its special tokens to it (:func:`realitycheck.backends._chat.chat_text`).
    The prompt alone and the prompt followed by the answer are tokenised;
    the answer's tokens are those after the longest prefix the two share
    (:func:`~realitycheck.backends._chat.continuation_start`), so a token
    spanning the boundary counts to the answer. A prompt the tokenizer's
    special tokens are added to is a plain text (a completion prompt ending
    with a cue such as ``Answer:``, or messages joined as ``role: content``
    lines): the answer follows it after one space, as a demonstration's
    answer follows its cue, unless the answer starts with whitespace. A chat
    template's text ends where the reply begins, so the answer follows it
    directly. Distinct prompts are tokenised once.
    """
    joined = [
        text + (" " if special and answer[:1] and not answer[:1].isspace() else "") + answer
        for (text, special), answer in zip(prompts, answers, strict=True)
    ]
    ids: dict[tuple[str, bool], list[int]] = {}
    for special in (True, False):
        wanted = [t for t, s in prompts if s == special]
        wanted += [j for j, (_, s) in zip(joined, prompts, strict=True) if s == special]
        texts = sorted(set(wanted))
        if texts:
            encoded = tokenizer(texts, add_special_tokens=special, return_attention_mask=False)
            ids.update(
                ((t, special), list(e)) for t, e in zip(texts, encoded["input_ids"], strict=True)
            )
    out: list[tuple[list[int], list[int]] | str] = []
    for k, ((text, special), whole_text) in enumerate(zip(prompts, joined, strict=True)):
        context, whole = ids[(text, special)], ids[(whole_text, special)]
        if context and whole[: len(context)] == context:
            shared = len(context)
        else:
            try:
                shared = continuation_start(context, whole, k)
            except InvalidInputError as exc:
                out.append(str(exc))
                continue
        out.append((whole[:shared], whole[shared:]))
    return out


def forced_answers(
    model: Any,
    tokenizer: Any,
    contexts: Sequence[Sequence[int]],
    answers: Sequence[Sequence[int]],
    *,
    batch_size: int,
    entropy: bool = True,
    top_k: int = 0,
    layers: Sequence[int] = (),
) -> list[SequenceFeatures | str]:
    """Measure each answer after its context: :func:`forward_features` in batches of similar length.

    The sequences are sorted by length (longest first), so a batch holds
    little padding; the results come back in the order of the inputs. When
    a batch fails (out of memory, a sequence longer than the model's
    positions) its sequences are measured one by one, so only the one that
    fails gets an error, ``"<type>: <message>"``, in place of its features.
    """
    out: list[SequenceFeatures | str] = ["not measured"] * len(answers)
    order = sorted(range(len(answers)), key=lambda i: -(len(contexts[i]) + len(answers[i])))
    kwargs: dict[str, Any] = {
        "pad_id": int(tokenizer.pad_token_id),
        "entropy": entropy,
        "top_k": top_k,
        "layers": layers,
    }
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        for part in _measured(model, tokenizer, contexts, answers, chunk, kwargs):
            out[part[0]] = part[1]
    return out


def _measured(
    model: Any,
    tokenizer: Any,
    contexts: Sequence[Sequence[int]],
    answers: Sequence[Sequence[int]],
    chunk: list[int],
    kwargs: dict[str, Any],
) -> list[tuple[int, SequenceFeatures | str]]:
    """The features of the sequences ``chunk`` in one pass, or one by one if the pass fails."""
    try:
        feats = forward_features(
            model,
            tokenizer,
            [contexts[i] for i in chunk],
            [answers[i] for i in chunk],
            **kwargs,
        )
    except (RuntimeError, ValueError, IndexError) as exc:
        if len(chunk) > 1:
            return [
                item
                for i in chunk
                for item in _measured(model, tokenizer, contexts, answers, [i], kwargs)
            ]
        return [(chunk[0], f"{type(exc).__name__}: {exc}")]
    return list(zip(chunk, feats, strict=True))
