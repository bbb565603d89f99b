"""The ``hf`` backend: a local Hugging Face causal LM, white-box.

Generation is batched (left-padded prompts, several return sequences per
prompt) with the decoding strategy of each request. Greedy and seeded
sampling requests are decoded by the backend's own loop
(:mod:`realitycheck.backends.hf._sampling`), which reads token
log-probabilities, full-vocabulary token entropies, top-k alternatives and
hidden-state summaries of chosen layers as it decodes; beam search and
unseeded sampling use ``model.generate``, followed by one teacher-forced pass
over prompt + output (:mod:`realitycheck.backends.hf._forward`) for the same
features. Nothing is downloaded unless
``model`` is a hub id the local Hugging Face cache lacks; torch and
transformers are imported only when the backend is used (install the ``hf``
extra).

The parts: ``_torch`` (import, device, weight type), ``_decoding`` (the
``generate`` arguments of a request), ``_sampling`` (the decoding loop),
``_forward`` (the teacher-forced pass), ``_loglik`` with ``_prefix`` and
``_packed`` (log-likelihoods of fixed continuations) and ``_pairs`` (the same
model as a sequence-pair classifier).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from realitycheck.backends import (
    Backend,
    Dtype,
    Generation,
    GenerationRequest,
    PairScore,
    backend,
    chat_text,
)
from realitycheck.backends.hf._decoding import (
    cut,
    eos_ids,
    generate_kwargs,
    rng_devices,
    stop_hit,
    stop_on_text,
)
from realitycheck.backends.hf._forward import padded
from realitycheck.backends.hf._sampling import decode, is_loop_decoded, is_seeded_sampling
from realitycheck.backends.hf._torch import batch_error, import_torch, resolve_device, torch_dtype
from realitycheck.errors import InvalidInputError
from realitycheck.params import InstanceOf, Interval, NonEmptyStr, OneOf, param, required

__all__ = ["HFBackend", "generate_kwargs", "import_torch", "load", "resolve_device", "torch_dtype"]


@functools.lru_cache(maxsize=2)
def load(model: str, device: str, dtype: str, attn_implementation: str) -> tuple[Any, Any]:
    """Load (once per process and spec) the model and tokenizer, ready to generate.

    ``dtype="auto"`` is float32 on CPU and bfloat16 (float16 where bfloat16
    is unsupported) on GPU. A tokenizer without a pad token pads with EOS.

    Raises:
        MissingDependencyError: If torch or transformers is missing.
        InvalidInputError: If the model cannot be loaded.
    """
    import_torch()
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    target = resolve_device(device)
    chosen = torch_dtype(target, dtype)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
        lm: Any = AutoModelForCausalLM.from_pretrained(
            model, dtype=chosen, attn_implementation=attn_implementation
        )
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"Cannot load the model {model!r}: {exc}", field="model") from None
    lm.to(target).eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return lm, tokenizer


def _group_key(request: GenerationRequest) -> str:
    """Requests batched together: equal settings apart from the prompt and the seed.

    Seeds need not match: seeded sampling draws each sequence from its own
    generator (:mod:`realitycheck.backends.hf._sampling`), and greedy and beam
    search use no randomness.
    """
    data = request.payload()
    for name in ("prompt", "messages", "seed"):
        data.pop(name, None)
    return repr((request.seed is None, sorted(data.items())))


@backend("hf")
@dataclass(frozen=True, kw_only=True)
class HFBackend(Backend):
    """A local Hugging Face causal LM (transformers), with white-box features.

    Token log-probabilities and entropies are those of the model's own
    distribution (temperature 1, no top-k/top-p truncation) at each generated
    token, read while decoding (greedy, seeded sampling) or from one
    teacher-forced pass over prompt + output (beam, unseeded sampling). Entropies are computed
    whenever log-probabilities are requested. Hidden features (for
    ``request.hidden_layers``; 0 = embeddings) summarise the hidden states at
    the generated tokens' positions: ``last@L{l}``, ``mean@L{l}`` and
    ``sv@L{l}`` (singular values of the ``T x d`` matrix with each row
    centred over its features). Generated text stops before the first EOS
    token (which is not scored) or stop string; tokens are kept up to the
    last one that ends before the stop string.

    With the ``pairs`` capability (:meth:`score_pairs`) the same ``model``
    is loaded as a sequence-pair classifier instead
    (:mod:`realitycheck.backends.hf._pairs`).

    Requests with identical settings are batched ``batch_size`` prompts at a
    time. Seeded sampling requests draw each sequence from its own random
    stream, seeded from the request's seed and the sample's index, and share
    one encoding of the prompt (:mod:`realitycheck.backends.hf._sampling`),
    so their samples do not depend on the batch size or on what else is in
    the batch; unseeded sampling uses ``model.generate`` and torch's global
    random stream.

    Args:
        model: Local folder or hub id, loaded with ``from_pretrained``.
        device: ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``, ``cuda:1``…
        dtype: ``auto``, ``float32``, ``float16`` or ``bfloat16``.
        batch_size: Prompts per generate call, sequences per teacher-forced pass.
        attn_implementation: The causal LM's attention (``eager``, ``sdpa``…).
        pairs_attn_implementation: The pair classifier's attention (:meth:`score_pairs`):
            ``auto`` = SDPA where supported, else eager. Not in the call address
            (same values up to float32 rounding, :mod:`realitycheck.backends.hf._pairs`).
        chat_template: Render ``messages`` with the tokenizer's chat template
            when it has one; otherwise (or when False) join them as
            ``role: content`` lines followed by ``assistant:``.
    """

    model: str = required(NonEmptyStr())
    device: str = param("auto", NonEmptyStr())
    dtype: Dtype = param("auto", OneOf(Dtype))
    batch_size: int = param(8, Interval(int, 1), in_key=False)
    attn_implementation: str = param("eager", NonEmptyStr())
    pairs_attn_implementation: str = param("auto", NonEmptyStr(), in_key=False)
    chat_template: bool = param(True, InstanceOf(bool))

    # 2: seeded samples are drawn by inverse transform from per-row uniforms (1 drew
    # them with torch.multinomial), so calls cached by version 1 are not reused.
    version: ClassVar[str] = "2"
    capabilities: ClassVar[frozenset[str]] = frozenset(
        {
            "completion",
            "chat",
            "n",
            "beam",
            "logprobs",
            "top_logprobs",
            "entropy",
            "hidden",
            "loglik",
            "pairs",
        }
    )

    def _loaded(self) -> tuple[Any, Any]:
        return load(self.model, self.device, self.dtype, self.attn_implementation)

    def prompt_ids(self, request: GenerationRequest) -> list[int]:
        """Return the token ids the model sees for ``request``."""
        _, tokenizer = self._loaded()
        text, special = chat_text(tokenizer, request, chat_template=self.chat_template)
        if not special:  # a chat template writes its own special tokens
            return list(tokenizer(text, add_special_tokens=False)["input_ids"])
        return list(tokenizer(text)["input_ids"])

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Answer each request, in order; a failed batch becomes error generations."""
        torch = import_torch()
        model, _ = self._loaded()
        answers: list[Generation | None] = [None] * len(requests)
        n_layers = int(model.config.get_text_config().num_hidden_layers)
        groups: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            bad = [layer for layer in request.hidden_layers if not 0 <= layer <= n_layers]
            if bad:
                answers[i] = Generation(
                    error=f"hidden layers {bad} are out of range 0..{n_layers} for {self.model!r}"
                )
                continue
            groups.setdefault(_group_key(request), []).append(i)
        for indices in groups.values():
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start : start + self.batch_size]
                try:
                    done = self._generate_chunk([requests[i] for i in chunk])
                except (RuntimeError, ValueError) as exc:
                    error = batch_error(torch, exc)
                    done = [Generation(error=error) for _ in chunk]
                for i, generation in zip(chunk, done, strict=True):
                    answers[i] = generation
        return [a if a is not None else Generation(error="not generated") for a in answers]

    def _generate_chunk(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        torch = import_torch()
        from realitycheck.backends.hf._forward import forced_features, spelling, step_features

        model, tokenizer = self._loaded()
        first = requests[0]
        pad_id = int(tokenizer.pad_token_id)
        prompts = [self.prompt_ids(r) for r in requests]
        ids, mask = padded(prompts, pad_id, left=True)
        width = ids.shape[1]
        eos = eos_ids(model, tokenizer)
        decoded = None
        if is_loop_decoded(first):
            hit = stop_hit(tokenizer, first.stop) if first.stop else None
            decoded = decode(
                model,
                ids.to(model.device),
                mask.to(model.device),
                requests,
                eos=eos,
                pad_id=pad_id,
                stop_hit=hit,
            )
            rows = decoded.tokens.tolist()
            per_prompt = first.n if is_seeded_sampling(first) else 1
        else:
            kwargs = generate_kwargs(first)
            if first.stop:
                kwargs["stopping_criteria"] = stop_on_text(tokenizer, first.stop, width)
            with torch.random.fork_rng(devices=rng_devices(torch, model)), torch.inference_mode():
                out = model.generate(
                    input_ids=ids.to(model.device),
                    attention_mask=mask.to(model.device),
                    pad_token_id=pad_id,
                    **kwargs,
                )
            rows = out[:, width:].tolist()
            per_prompt = kwargs["num_return_sequences"]
        copies = first.n // per_prompt  # greedy: one sequence, repeated n times
        kept = [cut(tokenizer, row, eos, first.stop) for row in rows]
        owners = [i for i in range(len(prompts)) for _ in range(per_prompt)]
        if decoded is not None:  # read during decoding: no second pass
            features = step_features(
                tokenizer,
                [len(c[0]) for c in kept],
                logprobs=decoded.logprobs,
                entropies=decoded.entropies,
                top=decoded.top,
                hidden=decoded.hidden,
            )
        elif first.logprobs or first.top_logprobs > 0 or first.hidden_layers:
            features = forced_features(
                model,
                tokenizer,
                first,
                [prompts[o] for o in owners],
                [c[0] for c in kept],
                batch_size=self.batch_size,
            )
        else:
            features = []
        spell = spelling(tokenizer, [c[0] for c in kept])
        results = []
        for i, prompt in enumerate(prompts):
            seqs = [j for j, o in enumerate(owners) if o == i] * copies
            texts = tuple(kept[j][1] for j in seqs)
            results.append(
                Generation(
                    texts=texts,
                    tokens=tuple(tuple(spell[t] for t in kept[j][0]) for j in seqs),
                    token_logprobs=tuple(tuple(features[j].token_logprobs) for j in seqs)
                    if first.logprobs
                    else (),
                    token_entropies=tuple(tuple(features[j].token_entropies) for j in seqs)
                    if first.logprobs
                    else (),
                    top_logprobs=tuple(tuple(features[j].top_logprobs) for j in seqs)
                    if first.top_logprobs > 0
                    else (),
                    hidden=tuple({k: tuple(v) for k, v in features[j].hidden.items()} for j in seqs)
                    if first.hidden_layers
                    else (),
                    finish_reasons=tuple(kept[j][2] for j in seqs),
                    usage={
                        "prompt_tokens": len(prompt),
                        "completion_tokens": sum(len(kept[j][0]) for j in seqs),
                    },
                )
            )
        return results

    def teacher_force(
        self, requests: Sequence[GenerationRequest], answers: Sequence[str]
    ) -> list[Generation]:
        """Return what the model makes of ``answers[i]`` read as its reply to ``requests[i]``.

        Nothing is generated: each answer is teacher-forced after the
        request's prompt (tokenised as :meth:`prompt_ids`; where prompt and
        answer meet, as :func:`~realitycheck.backends.hf._forward.answer_tokens`
        says) and measured as :meth:`generate` measures its own tokens: the
        answer's ``tokens``, and as the request asks, ``token_logprobs`` and
        ``token_entropies`` (``logprobs``), ``top_logprobs`` and ``hidden``
        (``hidden_layers``). ``n``, the decoding and ``max_tokens`` are not
        used. Sequences of similar length are measured ``batch_size`` at a
        time; one that cannot be measured (hidden layers out of range, longer
        than the model's positions) gets a generation with ``error`` set.
        Called through :func:`realitycheck.backends.teacher_force`.
        """
        from realitycheck.backends.hf._forward import answer_tokens, forced_answers, spelling

        model, tokenizer = self._loaded()
        n_layers = int(model.config.get_text_config().num_hidden_layers)
        answers_out: list[Generation | None] = [None] * len(requests)
        groups: dict[tuple[bool, int, tuple[int, ...]], list[int]] = {}
        for i, request in enumerate(requests):
            bad = [layer for layer in request.hidden_layers if not 0 <= layer <= n_layers]
            if bad:
                answers_out[i] = Generation(
                    error=f"hidden layers {bad} are out of range 0..{n_layers} for {self.model!r}"
                )
                continue
            asked = (request.logprobs, request.top_logprobs, request.hidden_layers)
            groups.setdefault(asked, []).append(i)
        for (logprobs, top_k, layers), indices in groups.items():
            texts = [
                chat_text(tokenizer, requests[i], chat_template=self.chat_template) for i in indices
            ]
            split = answer_tokens(tokenizer, texts, [answers[i] for i in indices])
            ok = [k for k, s in enumerate(split) if not isinstance(s, str)]
            pairs = [s for s in split if not isinstance(s, str)]
            measured = forced_answers(
                model,
                tokenizer,
                [p[0] for p in pairs],
                [p[1] for p in pairs],
                batch_size=self.batch_size,
                entropy=logprobs,
                top_k=top_k,
                layers=layers,
            )
            spell = spelling(tokenizer, [p[1] for p in pairs])
            for k, s in enumerate(split):
                if isinstance(s, str):
                    answers_out[indices[k]] = Generation(error=s)
            for k, (context, tokens), feats in zip(ok, pairs, measured, strict=True):
                i = indices[k]
                if isinstance(feats, str):
                    answers_out[i] = Generation(error=feats)
                    continue
                answers_out[i] = Generation(
                    texts=(answers[i],),
                    tokens=(tuple(spell[t] for t in tokens),),
                    token_logprobs=(tuple(feats.token_logprobs),) if logprobs else (),
                    token_entropies=(tuple(feats.token_entropies),) if logprobs else (),
                    top_logprobs=(tuple(feats.top_logprobs),) if top_k > 0 else (),
                    hidden=({k2: tuple(v) for k2, v in feats.hidden.items()},) if layers else (),
                    usage={"prompt_tokens": len(context), "completion_tokens": len(tokens)},
                )
        return [a if a is not None else Generation(error="not measured") for a in answers_out]

    def layer_count(self) -> int:
        """Return the model's number of hidden layers (``hidden_layers`` run 0 .. this)."""
        model, _ = self._loaded()
        return int(model.config.get_text_config().num_hidden_layers)

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Return ``sum_t log p(c_t | prompt, c_<t)`` for each ``(prompt, continuation)``.

        The prompt is tokenised alone (with the tokenizer's special tokens,
        e.g. BOS) and together with the continuation; the tokens of the
        joint text after the longest prefix the two tokenisations share are
        scored. A token that spans the boundary (a merge of the prompt's end
        and the continuation's start) therefore counts to the continuation.
        An empty continuation scores 0.

        Raises:
            InvalidInputError: If the prompt yields no token to condition on.
        """
        return [float(sum(values)) for values in self.loglik_tokens(pairs)]

    def loglik_tokens(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, ...]]:
        """Return each continuation token's log-probability (tokenised as in :meth:`loglik`).

        Pairs are sorted by length and scored ``batch_size`` sequences per
        forward pass (:mod:`realitycheck.backends.hf._loglik`).

        Raises:
            InvalidInputError: If a prompt yields no token to condition on.
        """
        from realitycheck.backends.hf._loglik import token_logliks

        model, tokenizer = self._loaded()
        return token_logliks(model, tokenizer, pairs, batch_size=self.batch_size)

    def score_pairs(
        self, pairs: Sequence[tuple[str, str]], *, labels: Sequence[str] = ()
    ) -> list[PairScore]:
        """Score each ``(premise, hypothesis)`` with ``model`` as a sequence-pair classifier.

        See :func:`realitycheck.backends.hf._pairs.score_pairs`: the labels
        are checked before any pair is scored, ``batch_size`` pairs per pass.
        """
        from realitycheck.backends.hf._pairs import score_pairs

        return score_pairs(
            pairs,
            labels=labels,
            model=self.model,
            device=self.device,
            dtype=self.dtype,
            attn_implementation=self.pairs_attn_implementation,
            batch_size=self.batch_size,
        )

    def last_hidden(self, texts: Sequence[str], *, layer: int = -1) -> list[tuple[float, ...]]:
        """Return the hidden state of each text's last token at ``layer`` (-1 = the last).

        Each text is tokenised with the tokenizer's special tokens (e.g. BOS)
        and read in one forward pass (right-padded batches of ``batch_size``;
        padding after the last token cannot change it in a causal model).
        ``hidden_states[layer]`` as transformers returns it: 0 = the
        embeddings, the last = the final layer's output after the model's
        final norm.

        Raises:
            InvalidInputError: If ``layer`` is out of range or a text yields no token.
        """
        torch = import_torch()
        model, tokenizer = self._loaded()
        n_layers = int(model.config.get_text_config().num_hidden_layers)
        if not -1 <= layer <= n_layers:
            raise InvalidInputError(
                f"The 'layer' of last_hidden must be in -1..{n_layers} for {self.model!r} "
                f"(0 = embeddings, -1 = last). Got {layer} instead.",
                field="layer",
            )
        ids = [list(tokenizer(text)["input_ids"]) for text in texts]
        empty = [k for k, row in enumerate(ids) if not row]
        if empty:
            raise InvalidInputError(f"Text {empty[0]} yields no token for {self.model!r}.")
        pad = int(tokenizer.pad_token_id)
        out: list[tuple[float, ...]] = []
        for start in range(0, len(ids), self.batch_size):
            chunk = ids[start : start + self.batch_size]
            batch, mask = padded(chunk, pad, left=False)
            with torch.inference_mode():
                result = model(
                    input_ids=batch.to(model.device),
                    attention_mask=mask.to(model.device),
                    output_hidden_states=True,
                    use_cache=False,
                )
            states = result.hidden_states[layer].float()
            out.extend(tuple(states[i, len(row) - 1].tolist()) for i, row in enumerate(chunk))
        return out
