"""The ``vllm`` backend: the offline vLLM engine (``vllm.LLM``) behind the same protocol.

vLLM is imported only when the backend is used (install the ``vllm`` extra;
it needs a GPU). Prompts are tokenised here, with the same chat-template
rule as the ``hf`` backend, and sent as token ids. Sampled requests map to
``SamplingParams`` (:func:`sampling_kwargs`), beam requests to
``LLM.beam_search`` with ``BeamSearchParams`` (:func:`beam_kwargs`); the
engine's outputs map back to :class:`Generation` (:func:`from_request_output`,
:func:`from_beam_sequences`). vLLM returns the log-probabilities of the
model's raw distribution, not full-vocabulary entropies or hidden states,
so this backend does not declare ``entropy`` or ``hidden``. A request's
JSON Schema is enforced by vLLM's guided decoding (``json_schema``).
Sequence-pair classifiers (``pairs``) run on vLLM's pooling runner
(:mod:`realitycheck.backends._vllm_pairs`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from realitycheck.backends._base import (
    Backend,
    Dtype,
    Generation,
    GenerationRequest,
    PairScore,
    backend,
)
from realitycheck.backends._chat import chat_text, continuation_start
from realitycheck.errors import InvalidInputError, MissingDependencyError
from realitycheck.params import InstanceOf, Interval, NonEmptyStr, OneOf, OrNone, param, required

__all__ = [
    "VLLMBackend",
    "beam_kwargs",
    "from_beam_sequences",
    "from_request_output",
    "sampling_kwargs",
    "sampling_params",
]

_PURPOSE = "The vllm backend"


def _copies(request: GenerationRequest) -> tuple[int, int]:
    """Return (sequences to ask the engine for, times to repeat each)."""
    greedy = request.decoding == "greedy" or request.temperature <= 0
    return (1, request.n) if greedy else (request.n, 1)


def sampling_kwargs(request: GenerationRequest) -> dict[str, Any]:
    """Map a non-beam request to ``SamplingParams`` keyword arguments.

    Greedy decoding (and any sampling strategy at temperature <= 0) asks for
    one sequence at temperature 0 (the caller repeats it ``n`` times);
    ``top_k`` defaults to 40 and ``top_p`` to 0.95 when the request leaves
    them at 0 / 1.0; ``top_k=-1`` means no top-k cut. ``logprobs`` is the
    number of alternatives per token (0 = only the chosen token's), or
    ``None`` when neither log-probs nor alternatives are requested. A
    request's ``json_schema`` becomes ``structured_outputs={"json": schema}``
    (vLLM's guided decoding; :func:`sampling_params` builds the object).
    """
    if request.decoding == "beam":
        raise InvalidInputError("Beam requests go to beam_kwargs, not sampling_kwargs.")
    n, _ = _copies(request)
    greedy = n == 1 and (request.decoding == "greedy" or request.temperature <= 0)
    top_k, top_p = -1, 1.0
    if not greedy and request.decoding == "top_k":
        top_k = request.top_k if request.top_k > 0 else 40
    if not greedy and request.decoding == "top_p":
        top_p = request.top_p if request.top_p < 1.0 else 0.95
    wants = request.logprobs or request.top_logprobs > 0
    guided = {}
    if request.json_schema:
        guided["structured_outputs"] = {"json": json.loads(request.json_schema)}
    return guided | {
        "n": n,
        "temperature": 0.0 if greedy else float(request.temperature),
        "top_p": top_p,
        "top_k": top_k,
        "seed": request.seed,
        "max_tokens": request.max_tokens,
        "stop": list(request.stop) or None,
        "logprobs": request.top_logprobs if wants else None,
    }


def sampling_params(engine_module: Any, kwargs: Mapping[str, Any]) -> Any:
    """Build vLLM's ``SamplingParams`` from :func:`sampling_kwargs`.

    Guided decoding is ``StructuredOutputsParams`` (vLLM >= 0.10.2); older
    releases name it ``GuidedDecodingParams``, passed as ``guided_decoding``.
    """
    kwargs = dict(kwargs)
    guided = kwargs.pop("structured_outputs", None)
    if guided is not None:
        module = engine_module.sampling_params
        if hasattr(module, "StructuredOutputsParams"):
            kwargs["structured_outputs"] = module.StructuredOutputsParams(**guided)
        else:
            kwargs["guided_decoding"] = module.GuidedDecodingParams(**guided)
    return engine_module.SamplingParams(**kwargs)


def beam_kwargs(request: GenerationRequest) -> dict[str, Any]:
    """Map a beam request to ``BeamSearchParams`` kwargs (``max(num_beams, n)`` beams)."""
    return {
        "beam_width": max(request.num_beams, request.n),
        "max_tokens": request.max_tokens,
        "length_penalty": 1.0,
    }


def _spell(entries: Mapping[int, Any], token: int, decode: Callable[[list[int]], str]) -> str:
    chosen = entries.get(token)
    text = getattr(chosen, "decoded_token", None)
    return text if isinstance(text, str) else decode([token])


def _sequence(
    token_ids: Sequence[int],
    steps: Sequence[Mapping[int, Any]] | None,
    request: GenerationRequest,
    decode: Callable[[list[int]], str],
) -> tuple[tuple[str, ...], tuple[float, ...], tuple[dict[str, float], ...]]:
    """Return (tokens, token log-probs, top-k alternatives) of one output sequence."""
    if not steps:
        return tuple(decode([t]) for t in token_ids), (), ()
    tokens, logprobs, top = [], [], []
    for token, entries in zip(token_ids, steps, strict=False):
        tokens.append(_spell(entries, token, decode))
        chosen = entries.get(token)
        logprobs.append(float(chosen.logprob) if chosen is not None else float("nan"))
        if request.top_logprobs > 0:
            ranked = sorted(entries.items(), key=lambda kv: -kv[1].logprob)
            alternatives: dict[str, float] = {}
            for tid, entry in ranked[: request.top_logprobs]:
                alternatives.setdefault(_spell(entries, tid, decode), float(entry.logprob))
            top.append(alternatives)
    return tuple(tokens), tuple(logprobs), tuple(top)


def from_request_output(
    output: Any, request: GenerationRequest, decode: Callable[[list[int]], str]
) -> Generation:
    """Map a vLLM ``RequestOutput`` (``.outputs`` of ``CompletionOutput``) to a Generation."""
    _, repeat = _copies(request)
    seqs = [c for c in output.outputs for _ in range(repeat)]
    parts = [_sequence(list(c.token_ids), c.logprobs, request, decode) for c in seqs]
    return Generation(
        texts=tuple(c.text for c in seqs),
        tokens=tuple(p[0] for p in parts),
        token_logprobs=tuple(p[1] for p in parts) if request.logprobs else (),
        top_logprobs=tuple(p[2] for p in parts) if request.top_logprobs > 0 else (),
        finish_reasons=tuple(str(c.finish_reason or "") for c in seqs),
        usage={
            "prompt_tokens": len(output.prompt_token_ids or ()),
            "completion_tokens": sum(len(c.token_ids) for c in seqs),
        },
    )


def from_beam_sequences(
    sequences: Sequence[Any],
    prompt_length: int,
    request: GenerationRequest,
    decode: Callable[[list[int]], str],
    eos_id: int | None,
) -> Generation:
    """Map the ``n`` best of a ``BeamSearchOutput.sequences`` to a Generation.

    A beam's ``tokens`` include the prompt; its ``logprobs`` hold one
    ``{token_id: Logprob}`` per generated step. A final EOS token is dropped
    (finish reason ``stop``).
    """
    picked = list(sequences)[: request.n]
    rows, parts, reasons = [], [], []
    for beam in picked:
        ids = list(beam.tokens[prompt_length:])
        steps = list(beam.logprobs)[-len(ids) :] if ids else []
        reason = "length"
        if ids and eos_id is not None and ids[-1] == eos_id:
            ids, steps, reason = ids[:-1], steps[:-1], "stop"
        rows.append(ids)
        parts.append(_sequence(ids, steps, request, decode))
        reasons.append(reason)
    return Generation(
        texts=tuple(decode(ids) for ids in rows),
        tokens=tuple(p[0] for p in parts),
        token_logprobs=tuple(p[1] for p in parts) if request.logprobs else (),
        top_logprobs=tuple(p[2] for p in parts) if request.top_logprobs > 0 else (),
        finish_reasons=tuple(reasons),
        usage={"prompt_tokens": prompt_length, "completion_tokens": sum(len(r) for r in rows)},
    )


WorkerBackend = Literal["ray", "mp"]
"""How vLLM runs its GPU workers: a Ray cluster (several nodes) or processes on one node."""


def _vllm() -> Any:
    try:
        import vllm
    except ImportError:
        raise MissingDependencyError("vllm", extra="vllm", purpose=_PURPOSE) from None
    return vllm


@functools.lru_cache(maxsize=1)
def _engine(
    model: str,
    dtype: str,
    tensor_parallel_size: int,
    gpu_memory_utilization: float,
    max_model_len: int | None,
    pipeline_parallel_size: int = 1,
    distributed_executor_backend: str | None = None,
) -> Any:
    spread = {}  # vLLM chooses the workers' backend itself unless told (ray for many nodes)
    if distributed_executor_backend is not None:
        spread["distributed_executor_backend"] = distributed_executor_backend
    return _vllm().LLM(
        model=model,
        dtype=dtype,
        tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size,
        gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=max_model_len,
        **spread,
    )


@backend("vllm")
@dataclass(frozen=True, kw_only=True)
class VLLMBackend(Backend):
    """The offline vLLM engine: fast batched generation with token log-probabilities.

    Decoding follows the same rules as the ``hf`` backend (greedy at
    temperature <= 0, ``top_k`` 40 and ``top_p`` 0.95 by default, beams =
    ``max(num_beams, n)``); log-probabilities are those of the model's raw
    distribution. ``loglik`` scores continuations with vLLM's prompt
    log-probabilities, with the same tokenisation boundary rule as ``hf``.

    Args:
        model: Local folder or hub id.
        dtype: ``auto``, ``float16``, ``bfloat16`` or ``float32``.
        tensor_parallel_size: GPUs each layer is sharded over (tensor parallel).
        pipeline_parallel_size: Stages the layers are split into (pipeline parallel);
            the engine uses ``tensor_parallel_size * pipeline_parallel_size`` GPUs.
        distributed_executor_backend: How vLLM runs its GPU workers: ``ray`` (GPUs
            on several nodes of a Ray cluster), ``mp`` (one node), or ``None``
            (vLLM's choice).
        gpu_memory_utilization: Share of GPU memory vLLM may take.
        max_model_len: Context length cap (``None`` = the model's).
        chat_template: Render ``messages`` with the tokenizer's chat template
            when it has one; otherwise join them as ``role: content`` lines.
    """

    model: str = required(NonEmptyStr())
    dtype: Dtype = param("auto", OneOf(Dtype))
    tensor_parallel_size: int = param(1, Interval(int, 1), in_key=False)
    pipeline_parallel_size: int = param(1, Interval(int, 1), in_key=False)
    distributed_executor_backend: WorkerBackend | None = param(
        None, OrNone(OneOf(WorkerBackend)), in_key=False
    )
    gpu_memory_utilization: float = param(0.9, Interval(float, 0, 1, closed="right"), in_key=False)
    max_model_len: int | None = param(None, OrNone(Interval(int, 1)))
    chat_template: bool = param(True, InstanceOf(bool))

    capabilities: ClassVar[frozenset[str]] = frozenset(
        {
            "completion",
            "chat",
            "n",
            "beam",
            "logprobs",
            "top_logprobs",
            "loglik",
            "json_schema",
            "pairs",
        }
    )

    def _llm(self) -> Any:
        return _engine(
            self.model,
            self.dtype,
            self.tensor_parallel_size,
            self.gpu_memory_utilization,
            self.max_model_len,
            self.pipeline_parallel_size,
            self.distributed_executor_backend,
        )

    def _prompt_ids(self, tokenizer: Any, request: GenerationRequest) -> list[int]:
        text, special = chat_text(tokenizer, request, chat_template=self.chat_template)
        if not special:  # a chat template writes its own special tokens
            return list(tokenizer.encode(text, add_special_tokens=False))
        return list(tokenizer.encode(text))

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Answer each request, in order; a failed engine call becomes error generations."""
        engine_module = _vllm()
        from vllm.sampling_params import BeamSearchParams

        llm = self._llm()
        tokenizer = llm.get_tokenizer()

        def decode(ids: list[int]) -> str:
            return str(tokenizer.decode(ids, skip_special_tokens=True))

        ids = [self._prompt_ids(tokenizer, r) for r in requests]
        answers: list[Generation] = [Generation(error="not generated")] * len(requests)
        sampled = [i for i, r in enumerate(requests) if r.decoding != "beam"]
        if sampled:
            try:
                outputs = llm.generate(
                    [{"prompt_token_ids": ids[i]} for i in sampled],
                    sampling_params=[
                        sampling_params(engine_module, sampling_kwargs(requests[i]))
                        for i in sampled
                    ],
                    use_tqdm=False,
                )
                for i, output in zip(sampled, outputs, strict=True):
                    answers[i] = from_request_output(output, requests[i], decode)
            except (RuntimeError, ValueError) as exc:
                for i in sampled:
                    answers[i] = Generation(error=f"{type(exc).__name__}: {exc}")
        for i, request in enumerate(requests):
            if request.decoding != "beam":
                continue
            try:
                (result,) = llm.beam_search(
                    [{"prompt_token_ids": ids[i]}], BeamSearchParams(**beam_kwargs(request))
                )
                answers[i] = from_beam_sequences(
                    result.sequences, len(ids[i]), request, decode, tokenizer.eos_token_id
                )
            except (RuntimeError, ValueError) as exc:
                answers[i] = Generation(error=f"{type(exc).__name__}: {exc}")
        return answers

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Return ``log p(continuation | prompt)`` for each pair (boundary rule as in ``hf``)."""
        return [float(sum(values)) for values in self.loglik_tokens(pairs)]

    def loglik_tokens(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, ...]]:
        """Return each continuation token's log-probability, from vLLM's prompt log-probs.

        All pairs go to the engine in one call (vLLM batches them itself),
        each as prompt + continuation with ``prompt_logprobs=0`` and one
        generated token, which is ignored.
        """
        llm = self._llm()
        tokenizer = llm.get_tokenizer()
        wholes, starts = [], []
        for k, (prompt, continuation) in enumerate(pairs):
            ctx = list(tokenizer.encode(prompt))
            whole = list(tokenizer.encode(prompt + continuation))
            wholes.append(whole)
            starts.append(continuation_start(ctx, whole, k))
        params = _vllm().SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        outputs = llm.generate(
            [{"prompt_token_ids": w} for w in wholes], sampling_params=params, use_tqdm=False
        )
        return [
            tuple(float(out.prompt_logprobs[t][whole[t]].logprob) for t in range(start, len(whole)))
            for out, whole, start in zip(outputs, wholes, starts, strict=True)
        ]

    def score_pairs(
        self, pairs: Sequence[tuple[str, str]], *, labels: Sequence[str] = ()
    ) -> list[PairScore]:
        """Score each ``(premise, hypothesis)`` with ``model`` on vLLM's pooling runner.

        See :func:`realitycheck.backends._vllm_pairs.score_pairs`.
        """
        from realitycheck.backends._vllm_pairs import score_pairs

        return score_pairs(
            pairs,
            labels=labels,
            import_vllm=_vllm,
            model=self.model,
            dtype=self.dtype,
            tensor_parallel_size=self.tensor_parallel_size,
            gpu_memory_utilization=self.gpu_memory_utilization,
            max_model_len=self.max_model_len,
        )
