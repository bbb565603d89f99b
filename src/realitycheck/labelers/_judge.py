"""What every LLM judge shares: a nested backend, a versioned prompt, tolerant parsing, repeats.

A judge is a :class:`~realitycheck.labelers.Labeler` that asks a backend (its
``judge`` field, a nested component) to grade each response and maps the
answer to a label. The pieces live here once:

* **Prompts** are versioned templates shipped as package data
  (``realitycheck/labelers/prompts/<name>.v<N>.txt``, placeholders
  ``$name``). Every piece of user text (question, references, context, the
  response) is inserted as a JSON string between data markers, so it reads as
  quoted material and cannot close the quote or pose as an instruction.
  The SHA-256 of a judge's templates is its ``prompt_sha256`` parameter: it is
  written in the spec of every label (not in the key), and a spec recorded with
  another template is refused when rebuilt.
* **Calls** go through :func:`realitycheck.backends.cached_generate` with the
  run's call cache: a rerun pays for nothing already answered, and the
  backend bounds concurrency and retries.
* **Structured output**: with ``structured=True`` (the default) a judge
  whose backend takes chat messages and has the ``json_schema`` capability
  (``openai`` in chat mode) asks for a reply that follows a JSON Schema
  (:meth:`Judge.schema`); set ``structured=False`` for a server that refuses
  ``response_format``. Every reply is parsed the same way either way.
* **Reading** a reply is :func:`realitycheck.verdicts.read_verdict` (public
  as :func:`realitycheck.labelers.parse_verdict`): its conclusion only (a
  JSON field, a verdict line such as ``Final classification: X``, a
  concluding sentence, a bare verdict), never a verdict word in its
  reasoning; a negated, hedged or two-verdict conclusion, or a reply cut off
  by the length limit (``finish_reason == "length"``) before a complete
  conclusion, gives none. Such a reply is *unreadable*: the label counts it
  (``Label.unreadable``) and keeps its text and the reason in ``raw``. Where
  a JSON Schema was sent, ``raw["schema_followed"]`` says whether each reply
  actually followed it.
* **Nothing unreadable becomes a default value**: a label whose every reply
  is unreadable has category ``invalid`` and ``hallucinated=None`` with the
  reason as its error (``invalid_as="excluded"``, the default).
  ``invalid_as="hallucinated"`` counts such a label as hallucinated instead,
  the harshest reading, for studies that want it; the replies are still
  counted as unreadable.
* **Repeats**: ``repeats=n`` asks n times at the judge's ``temperature`` with
  seeds ``seed, seed + 1, …``; the most frequent parsed verdict decides (ties go
  to the verdict listed first in the judge's ``verdicts``, where hallucinated
  verdicts come first), and the agreement rate (share of the n replies that
  gave the deciding verdict) is kept in ``raw``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from realitycheck.errors import InvalidInputError
from realitycheck.labelers._base import Labeler
from realitycheck.params import InstanceOf, Interval, OneOf, Satisfies, param
from realitycheck.records import INVALID, Example, Label, Response
from realitycheck.registry import nested
from realitycheck.verdicts import Reading, parse_verdict, quote_reply, read_verdict

if TYPE_CHECKING:
    from realitycheck.backends import Backend, CallCache, Generation, GenerationRequest

__all__ = [
    "INVALID",
    "Judge",
    "Unjudgeable",
    "cost_at",
    "cut_off",
    "load_template",
    "parse_verdict",
    "prompt_sha256_param",
    "quote",
    "substitute",
    "templates_sha256",
    "unreadable_error",
]

POLICIES = ("excluded", "hallucinated")
"""What an invalid reply (or a refusal, for ``qa_judge``) becomes."""


class Unjudgeable(InvalidInputError):
    """A response the judge cannot be asked about (no reference, empty text)."""


@functools.cache
def load_template(name: str) -> str:
    """Return the text of the prompt template ``name`` (``qa_judge.v1.txt``) from package data."""
    path = resources.files("realitycheck.labelers").joinpath("prompts", name)
    return path.read_text(encoding="utf-8")


def templates_sha256(names: Sequence[str]) -> str:
    """Return the SHA-256 of the templates ``names``: each name, NUL, its text, NUL, in order."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(
            name.encode("utf-8") + b"\x00" + load_template(name).encode("utf-8") + b"\x00"
        )
    return digest.hexdigest()


def prompt_sha256_param(names: Sequence[str]) -> Any:
    """Declare the ``prompt_sha256`` field of a judge that uses the templates ``names``.

    Its default is the hash of the installed templates and it accepts nothing
    else, so a spec recorded with another prompt is refused when rebuilt. It
    is left out of the key (the prompt text already addresses the call cache).
    """
    sha = templates_sha256(names)
    return param(
        sha,
        Satisfies(
            lambda value: value == sha,
            f"the SHA-256 of the installed templates {', '.join(names)} ({sha[:12]}…); "
            "a spec recorded with another prompt version cannot be rebuilt",
        ),
        in_key=False,
        doc="SHA-256 of the prompt templates (written in the spec)",
    )


_JSON_TEXT = json.JSONEncoder(ensure_ascii=False)
"""Writes :func:`quote`'s strings and a label's ``raw`` as ``json.dumps(...,
ensure_ascii=False)`` does, with one encoder instead of one built per call."""


def quote(value: str | Sequence[str]) -> str:
    """Return user text as a JSON string (a list as a JSON list), so it reads as quoted data."""
    if isinstance(value, str):
        return _JSON_TEXT.encode(value)
    return _JSON_TEXT.encode(list(value))


def cut_off(generation: Generation) -> bool:
    """Return whether the first reply of ``generation`` was cut off by the length limit."""
    return bool(generation.finish_reasons) and generation.finish_reasons[0] == "length"


def unreadable_error(replies: Sequence[str], readings: Sequence[Reading]) -> str:
    """Return the error of a label none of whose replies could be read: the reason and a quote."""
    reason = Counter(r.reason for r in readings).most_common(1)[0][0]
    text = next((t for t, r in zip(replies, readings, strict=True) if r.reason == reason), "")
    n = len(replies)
    return (
        f"no verdict in the judge's {'reply' if n == 1 else f'{n} replies'} ({reason}): "
        f"{quote_reply(text)}"
    )


def cost_at(
    price: Sequence[float] | None, prompt_tokens: int, completion_tokens: int
) -> float | None:
    """Return the cost of the tokens at ``price`` (per 1,000 prompt and completion tokens).

    ``None`` when there is no price, or both prices are zero.
    """
    if price is None or not any(price):
        return None
    return prompt_tokens / 1000 * price[0] + completion_tokens / 1000 * price[1]


def _usage(generations: Sequence[Generation], price: Sequence[float] | None) -> dict[str, Any]:
    prompt = sum(int(g.usage.get("prompt_tokens", 0)) for g in generations)
    completion = sum(int(g.usage.get("completion_tokens", 0)) for g in generations)
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached": sum(g.cached for g in generations),
    }
    cost = cost_at(price, prompt, completion)
    if cost is not None:
        out["cost"] = cost
    return out


@dataclass(frozen=True, kw_only=True)
class Judge(Labeler):
    """Base of the LLM judges: see the module documentation.

    A subclass adds a ``prompt_sha256`` field (:func:`prompt_sha256_param`
    of its templates), implements :meth:`prompt`, and sets ``verdicts`` (tie
    order: hallucinated verdicts first), ``hallucinated_verdicts``, ``field``
    (the JSON field the prompt asks for) and ``letters``. ``judge`` has no
    default: a mock judge by default would give meaningless labels without a
    word, and a paid model would spend money nobody asked to spend.

    The label of a response: ``category`` is the deciding verdict (or
    ``invalid``); ``hallucinated`` is :meth:`outcome` of it; ``score`` is the
    share of the replies whose verdict counts as hallucinated among those that
    count either way (higher = more likely hallucinated; ``None`` when none
    does); ``unreadable`` counts the replies that gave no verdict; ``raw`` is
    a JSON object with the ``replies``, their ``verdicts`` (``invalid`` for an
    unreadable one) and the ``reasons`` of the reading
    (:data:`realitycheck.verdicts.REASONS`), the ``agreement`` rate, the
    ``usage`` (prompt and completion tokens of the calls behind the label, how
    many came from the cache, and the ``cost`` at the backend's
    ``price_per_1k`` when it has one), ``truncated`` (which replies the length
    limit cut off, when one was), ``schema_followed`` (when a JSON Schema was
    sent: whether each reply is one JSON object that follows it),
    ``unsupported`` (request features the server did not honour) and, where
    a policy decided the verdict, a ``note``. A label none of whose replies
    could be read is ``invalid`` with ``hallucinated=None`` and the reason
    and a quote of the reply as its error (see ``invalid_as``). A backend
    failure on any of the calls gives ``hallucinated=None`` with the error
    and ``failed=True``, ``retryable`` when every failure may pass (the
    answered calls are cached, so the rerun pays only for those).
    """

    # 'backend' is what the README once told users to write: it still builds, with a warning.
    judge: Backend = nested(
        "backends", default=dataclasses.MISSING, doc="the backend asked", aliases=("backend",)
    )
    invalid_as: Literal["excluded", "hallucinated"] = param("excluded", OneOf(POLICIES))
    repeats: int = param(1, Interval(int, 1, 100))
    temperature: float = param(0.0, Interval(float, 0, 2))
    seed: int = param(0, Interval(int, 0))
    max_tokens: int = param(256, Interval(int, 1))
    structured: bool = param(True, InstanceOf(bool))

    verdicts: ClassVar[tuple[str, ...]] = ()
    hallucinated_verdicts: ClassVar[frozenset[str]] = frozenset()
    field: ClassVar[str] = "verdict"
    letters: ClassVar[bool] = False
    reason_field: ClassVar[str] = "reason"

    @property
    def overlaps_batches(self) -> bool:
        """Whether the judge's backend is a server (see :attr:`Labeler.overlaps_batches`)."""
        return self.judge.remote

    def prompt(self, response: Response, example: Example | None) -> str:
        """Return the prompt that asks about ``response``.

        Raises:
            Unjudgeable: If the response or its example lacks what the judge needs.
        """
        raise NotImplementedError

    def outcome(self, verdict: str) -> bool | None:
        """Return whether ``verdict`` (one of ``verdicts``, or ``invalid``) means hallucinated.

        ``invalid`` follows ``invalid_as``; ``None`` means the label leaves it out.
        """
        if verdict == INVALID:
            return True if self.invalid_as == "hallucinated" else None
        return verdict in self.hallucinated_verdicts

    def note(self, verdict: str) -> str:
        """Return why ``verdict`` was left out (``hallucinated=None``), or ``""``."""
        if verdict == INVALID and self.invalid_as == "excluded":
            return "no reply could be read; excluded by invalid_as='excluded'"
        if verdict == INVALID:
            return "no reply could be read; counted as hallucinated by invalid_as='hallucinated'"
        return ""

    def parse(self, text: str, *, truncated: bool = False) -> str | None:
        """Return the verdict of one reply, or ``None`` if it cannot be read."""
        return self.read(text, truncated=truncated).verdict

    def read(self, text: str, *, truncated: bool = False) -> Reading:
        """Return the :class:`~realitycheck.verdicts.Reading` of one reply."""
        return read_verdict(
            text,
            field=self.field,
            choices=self.verdicts,
            letters=self.letters,
            truncated=truncated,
        )

    def schema(self) -> dict[str, Any]:
        """Return the JSON Schema of a reply: a short reason, then one of ``verdicts``."""
        return {
            "type": "object",
            "properties": {
                self.reason_field: {"type": "string"},
                self.field: {"type": "string", "enum": list(self.verdicts)},
            },
            "required": [self.reason_field, self.field],
            "additionalProperties": False,
        }

    @functools.cached_property
    def _schema_json(self) -> str:
        """:meth:`schema` as the JSON text a request sends (sorted keys), written once per judge."""
        return json.dumps(self.schema(), sort_keys=True)

    def requests(self, prompt: str) -> list[GenerationRequest]:
        """Return the ``repeats`` requests that ask ``prompt`` (seeds ``seed``, ``seed + 1``…)."""
        from realitycheck.backends import GenerationRequest

        sampled = self.temperature > 0
        # Chat messages where the backend takes them (an openai backend can be
        # set to the completions endpoint, which takes a prompt only).
        chat = "chat" in self.judge.capabilities and (
            getattr(self.judge, "mode", "chat") != "completions"
        )
        text: dict[str, Any] = (
            {"messages": ({"role": "user", "content": prompt},)} if chat else {"prompt": prompt}
        )
        if self.structured and chat and "json_schema" in self.judge.capabilities:
            text["json_schema"] = self._schema_json
        out = []
        for k in range(self.repeats):
            out.append(
                GenerationRequest(
                    **text,
                    decoding="sampling" if sampled else "greedy",
                    temperature=self.temperature,
                    max_tokens=self.max_tokens,
                    seed=self.seed + k,
                )
            )
        return out

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order (see the class documentation).

        Args:
            responses: The responses to judge.
            examples: Their examples, by ``example_id``.
            cache: The run's call cache; every call goes through it.
        """
        from realitycheck.backends import cached_generate

        asked, out = self._asked(responses, examples)
        requests = [request for group in asked.values() for request in group]
        generations = cached_generate(self.judge, requests, cache=cache) if requests else []
        position = 0
        for i, group in asked.items():
            out[i] = self._decide(
                responses[i], generations[position : position + len(group)], group
            )
            position += len(group)
        return [out[i] for i in range(len(responses))]

    def _asked(
        self, responses: Sequence[Response], examples: Mapping[str, Example]
    ) -> tuple[dict[int, list[GenerationRequest]], dict[int, Label]]:
        """Return the requests of each response the judge can be asked about, by position.

        Also returns, by position, the label of each other response: no
        verdict, and why (:class:`Unjudgeable`) as its error.
        """
        asked: dict[int, list[GenerationRequest]] = {}
        unjudgeable: dict[int, Label] = {}
        for i, response in enumerate(responses):
            try:
                asked[i] = self.requests(self.prompt(response, examples.get(response.example_id)))
            except Unjudgeable as exc:
                unjudgeable[i] = self._label(response, None, error=str(exc))
        return asked, unjudgeable

    def _decide(
        self,
        response: Response,
        generations: Sequence[Generation],
        requests: Sequence[GenerationRequest],
    ) -> Label:
        price = getattr(self.judge, "price_per_1k", None)
        replies = [g.texts[0] if g.texts else "" for g in generations]
        raw: dict[str, Any] = {"replies": replies, "usage": _usage(generations, price)}
        unsupported = sorted({u for g in generations for u in g.unsupported})
        if unsupported:
            raw["unsupported"] = unsupported
        failed = [g for g in generations if g.error]
        if failed:
            raw["errors"] = [g.error for g in generations]
            return self._label(
                response,
                None,
                raw=_JSON_TEXT.encode(raw),
                error=(
                    f"the judge {self.judge.key!r} failed on {len(failed)} of "
                    f"{len(generations)} calls: {failed[0].error}"
                ),
                retryable=all(g.retryable for g in failed),
                failed=True,
            )
        cut = [cut_off(g) for g in generations]
        readings = [self.read(t, truncated=c) for t, c in zip(replies, cut, strict=True)]
        if any(r.json_schema for r in requests):
            from realitycheck.backends import reply_follows

            raw["schema_followed"] = [
                reply_follows(t, r.json_schema) if r.json_schema else None
                for t, r in zip(replies, requests, strict=True)
            ]
        if any(cut):
            raw["truncated"] = cut
        parsed = [r.verdict for r in readings]
        counts = Counter(v for v in parsed if v is not None)
        if counts:
            top = max(counts.values())
            verdict = next(v for v in self.verdicts if counts[v] == top)
        else:
            verdict = INVALID
        outcomes = [self.outcome(v if v is not None else INVALID) for v in parsed]
        counted = [o for o in outcomes if o is not None]
        raw["verdicts"] = [v if v is not None else INVALID for v in parsed]
        raw["reasons"] = [r.reason for r in readings]
        raw["agreement"] = sum(v == verdict for v in raw["verdicts"]) / len(parsed)
        note = self.note(verdict)
        if note:
            raw["note"] = note
        hallucinated = self.outcome(verdict)
        unreadable = len(parsed) - sum(counts.values())
        error = ""
        if verdict == INVALID and hallucinated is None:
            error = unreadable_error(replies, readings)
        return self._label(
            response,
            hallucinated,
            score=sum(counted) / len(counted) if counted else None,
            category=verdict,
            raw=_JSON_TEXT.encode(raw),
            error=error,
            unreadable=unreadable,
        )


def substitute(template: str, **fields: str) -> str:
    """Fill ``$name`` placeholders of ``template``; every field must be given."""
    return string.Template(load_template(template)).substitute(fields)
