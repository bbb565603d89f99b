"""``claim_judge``: split a response into claims, check each against the source (RAGAS style).

The claim-wise judge of "Benchmarking LLM Faithfulness in RAG with Evolving
Leaderboards" (seed paper 003, §6.2), after RAGAS (Es et al., 2024): rather
than judging a whole response at once, an LLM

1. breaks the response into short self-contained factual claims
   (:mod:`realitycheck.claims`, ``claim_split.v1.txt``, a JSON list; the
   grounding detectors with ``unit=claims`` ask the same request, so with the
   same LLM the split is paid once for both), then
2. checks every claim of the response against the source in one call
   (``prompts/claim_verify.v1.txt``, one ``supported`` / ``unsupported``
   per claim, in order).

The response is hallucinated when any claim is unsupported; the verdict of
every claim is kept in the label's ``raw``. Both rounds go through the run's
call cache, so a rerun makes no call at all. The prompts are this project's
own wording.

A response that makes **no factual claim** (the split gives an empty list,
e.g. "I do not know") asserts nothing the source could contradict: by the
rule "hallucinated if any claim is unsupported" it is not hallucinated, so
by default its label is ``hallucinated=False`` with ``category="no_claims"``
and no score (the share of unsupported claims among none is undefined,
where RAGAS reports NaN). ``no_claims_as="excluded"`` leaves such responses
out instead (``hallucinated=None``, a note in ``raw``, no error), for
studies where a refusal should not count as faithful.

``label --dry-run`` plans the split round only: the verification prompts
depend on the claims the split returns, so they cannot be known (or priced)
before it runs; expect roughly twice the planned prompt tokens.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from realitycheck.claims import (
    SPLIT_TEMPLATE,
    json_values,
    parse_claims,
    split_prompt,
    split_request,
    split_schema,
    split_template,
)
from realitycheck.labelers._base import labeler
from realitycheck.labelers._judge import (
    INVALID,
    Judge,
    _usage,
    cut_off,
    load_template,
    parse_verdict,
    quote,
    substitute,
)
from realitycheck.labelers.faithfulness_judge import source_fields
from realitycheck.params import Interval, OneOf, Satisfies, param, with_default
from realitycheck.records import Example, Label, Response
from realitycheck.verdicts import quote_reply

if TYPE_CHECKING:
    from realitycheck.backends import CallCache, Generation, GenerationRequest

__all__ = ["NO_CLAIMS", "ClaimJudge", "parse_claim_verdicts", "parse_claims"]

VERIFY = "claim_verify.v1.txt"
NO_CLAIMS = "no_claims"
"""The category of a response in which the split found no factual claim."""
CLAIM_VERDICTS = ("unsupported", "supported")


def _prompt_sha256_param() -> Any:
    """Declare ``prompt_sha256``: the SHA-256 of the split and the verification templates.

    The hash of :func:`realitycheck.labelers.prompt_sha256_param`, each name,
    NUL, its text, NUL, in order, over the split template, which lives in
    :mod:`realitycheck.claims` (shared with the claim-wise detectors), and
    the verification template of the judges' prompts.
    """
    digest = hashlib.sha256()
    for name, text in ((SPLIT_TEMPLATE, split_template()), (VERIFY, load_template(VERIFY))):
        digest.update(name.encode("utf-8") + b"\x00" + text.encode("utf-8") + b"\x00")
    sha = digest.hexdigest()
    return param(
        sha,
        Satisfies(
            lambda value: value == sha,
            f"the SHA-256 of the installed templates {SPLIT_TEMPLATE}, {VERIFY} ({sha[:12]}…); "
            "a spec recorded with another prompt version cannot be rebuilt",
        ),
        in_key=False,
        doc="SHA-256 of the prompt templates (written in the spec)",
    )


def _claim_verdict(item: Any) -> str | None:
    if isinstance(item, dict):
        item = item.get("verdict")
    if not isinstance(item, str):
        return None
    return parse_verdict(item, field="verdict", choices=CLAIM_VERDICTS)


def parse_claim_verdicts(text: str, n_claims: int) -> list[str] | None:
    """Return one verdict per claim from a verification reply, or ``None``.

    Accepted: a JSON object with a ``verdicts`` list, or a bare JSON list, of
    exactly ``n_claims`` items, each an object with a ``verdict`` field or a
    plain string, ``supported`` or ``unsupported`` (the last such list in the
    reply wins). A list of another length, or an item without a readable
    verdict, makes the whole reply unreadable: claims are matched by position,
    so a gap would shift every verdict after it.
    """
    for value in reversed(json_values(text)):
        items = value.get("verdicts") if isinstance(value, dict) else value
        if not isinstance(items, list) or len(items) != n_claims:
            continue
        verdicts = [_claim_verdict(item) for item in items]
        if all(v is not None for v in verdicts):
            return [v for v in verdicts if v is not None]
    return None


@labeler("claim_judge")
@dataclass(frozen=True, kw_only=True)
class ClaimJudge(Judge):
    """An LLM splits a response into claims and checks each against the source (claim-wise).

    ``category`` is ``unsupported`` (at least one claim is not backed by the
    source: hallucinated), ``supported`` (every claim is), ``no_claims``
    (see ``no_claims_as``) or ``invalid`` (a reply of either round could not
    be parsed; see ``invalid_as``). ``score`` in ``[0, 1]`` is the share of
    the claims that are unsupported (higher = more likely hallucinated;
    ``None`` without claims or verdicts). ``raw`` is a JSON object with the
    ``replies`` of the two rounds, the ``claims`` (each ``{"claim",
    "verdict"}``), the ``usage`` of both calls and, where a policy left the
    label out, a ``note``. The source is the example's ``context`` (with its
    ``question`` as the request); a response without one, or with empty
    text, gets an error; a backend failure in either round gives an error
    label, ``retryable`` when the failure may pass.

    Args:
        judge: The backend that splits and checks (required), e.g. ``openai[model=gpt-4o]``.
        no_claims_as: What a response without factual claims becomes:
            ``faithful`` (``hallucinated=False``) or ``excluded`` (``None``).
        invalid_as: What a label none of whose replies could be read becomes:
            ``excluded`` (the default: ``hallucinated=None``, the reason as error)
            or ``hallucinated``; the replies are counted as unreadable either way.
        repeats: Always 1: a majority over differing claim lists is undefined.
        temperature: The judge's sampling temperature (0: greedy).
        seed: Seed of the calls.
        max_tokens: Most tokens of a reply (a long response has many claims).
        structured: Ask for replies that follow a JSON Schema where the backend
            can constrain them (``openai`` in chat mode); ``False`` for servers that cannot.
        prompt_sha256: SHA-256 of the two prompt templates (set; written in the spec).
    """

    no_claims_as: Literal["faithful", "excluded"] = param(
        "faithful", OneOf(("faithful", "excluded"))
    )
    repeats: int = param(1, Interval(int, 1, 1), doc="always 1 (claim lists are not voted on)")
    max_tokens: int = with_default(Judge, "max_tokens", 1024)
    prompt_sha256: str = _prompt_sha256_param()

    needs: ClassVar[frozenset[str]] = frozenset({"context"})
    verdicts: ClassVar[tuple[str, ...]] = CLAIM_VERDICTS
    hallucinated_verdicts: ClassVar[frozenset[str]] = frozenset({"unsupported"})

    def prompt(self, response: Response, example: Example | None) -> str:
        """Return the prompt of the first round: split ``response`` into claims.

        Raises:
            Unjudgeable: If the example has no context or the response is empty.
        """
        source_fields(response, example)  # a source to check against, a response to split
        return split_prompt(example.task if example else "", response.text)

    def verification_prompt(
        self, response: Response, example: Example | None, claims: Sequence[str]
    ) -> str:
        """Return the prompt of the second round: check ``claims`` against the source.

        Raises:
            Unjudgeable: If the example has no context or the response is empty.
        """
        return substitute(VERIFY, claims=quote(claims), **source_fields(response, example))

    def schema(self) -> dict[str, Any]:
        """Return the JSON Schema of a split reply: ``{"claims": [str, ...]}``."""
        return split_schema()

    def requests(self, prompt: str) -> list[GenerationRequest]:
        """Return the one request of ``prompt`` (:func:`realitycheck.claims.split_request`).

        Built as a claim-wise detector builds its split, so with the same
        backend and settings the two share the call-cache key.
        """
        return [
            split_request(
                self.judge,
                prompt,
                structured=self.structured,
                temperature=self.temperature,
                seed=self.seed,
                max_tokens=self.max_tokens,
            )
        ]

    def verification_schema(self) -> dict[str, Any]:
        """Return the JSON Schema of a verification reply: ``{"verdicts": [{…}, ...]}``."""
        item = {
            "type": "object",
            "properties": {
                "claim": {"type": "integer"},
                "reason": {"type": "string"},
                "verdict": {"type": "string", "enum": list(CLAIM_VERDICTS)},
            },
            "required": ["claim", "reason", "verdict"],
            "additionalProperties": False,
        }
        return {
            "type": "object",
            "properties": {"verdicts": {"type": "array", "items": item}},
            "required": ["verdicts"],
            "additionalProperties": False,
        }

    def verification_requests(self, prompt: str) -> list[GenerationRequest]:
        """Return the request of the second round (its JSON Schema where one is sent)."""
        schema = json.dumps(self.verification_schema(), sort_keys=True)
        return [
            dataclasses.replace(request, json_schema=schema) if request.json_schema else request
            for request in self.requests(prompt)
        ]

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
            cache: The run's call cache; the calls of both rounds go through it.
        """
        from realitycheck.backends import cached_generate

        asked, out = self._asked(responses, examples)
        split = {i: request for i, (request,) in asked.items()}  # repeats is always 1
        answers = dict(
            zip(split, cached_generate(self.judge, list(split.values()), cache=cache), strict=True)
        )
        claims: dict[int, list[str]] = {}
        verify: dict[int, GenerationRequest] = {}
        for i, generation in answers.items():
            response = responses[i]
            listed = None if generation.error else parse_claims(_text(generation))
            if generation.error or listed is None or not listed:
                out[i] = self._finish(response, [generation], listed, None, [split[i]])
                continue
            claims[i] = listed
            prompt = self.verification_prompt(response, examples.get(response.example_id), listed)
            (verify[i],) = self.verification_requests(prompt)
        checked = cached_generate(self.judge, list(verify.values()), cache=cache) if verify else []
        for i, generation in zip(verify, checked, strict=True):
            out[i] = self._finish(
                responses[i], [answers[i], generation], claims[i], generation, [split[i], verify[i]]
            )
        return [out[i] for i in range(len(responses))]

    def _finish(
        self,
        response: Response,
        generations: Sequence[Generation],
        claims: list[str] | None,
        checked: Generation | None,
        requests: Sequence[GenerationRequest],
    ) -> Label:
        """Return the label from the calls made for ``response`` (one round or two)."""
        price = getattr(self.judge, "price_per_1k", None)
        raw: dict[str, Any] = {
            "replies": [_text(g) for g in generations],
            "usage": _usage(generations, price),
        }
        failed = [g for g in generations if g.error]
        if failed:
            raw["errors"] = [g.error for g in generations]
            return self._label(
                response,
                None,
                raw=json.dumps(raw, ensure_ascii=False),
                error=(
                    f"the judge {self.judge.key!r} failed on the "
                    f"{'claim split' if len(generations) == 1 else 'claim check'}: "
                    f"{failed[0].error}"
                ),
                retryable=all(g.retryable for g in failed),
                failed=True,
            )
        if any(r.json_schema for r in requests):
            from realitycheck.backends import reply_follows

            raw["schema_followed"] = [
                reply_follows(_text(g), r.json_schema) if r.json_schema else None
                for g, r in zip(generations, requests, strict=True)
            ]
        if any(cut_off(g) for g in generations):
            raw["truncated"] = [cut_off(g) for g in generations]
        verdicts = None
        if claims and checked is not None:
            verdicts = parse_claim_verdicts(_text(checked), len(claims))
        if claims is None or (claims and verdicts is None):
            category = INVALID
            raw["round"] = "claim split" if claims is None else "claim check"
            note = self.note(INVALID)
            if note:
                raw["note"] = note
            if claims:
                raw["claims"] = [{"claim": c, "verdict": INVALID} for c in claims]
            unread = generations[-1]
            reason = (
                "truncated"
                if cut_off(unread)
                else "no claim list"
                if claims is None
                else f"no list of {len(claims)} verdicts"
            )
            raw["reasons"] = [reason]
            invalid_as = self.outcome(INVALID)
            quoted = quote_reply(_text(unread))
            return self._label(
                response,
                invalid_as,
                category=category,
                raw=json.dumps(raw, ensure_ascii=False),
                error=(
                    f"no {raw['round']} in the judge's reply ({reason}): {quoted}"
                    if invalid_as is None
                    else ""
                ),
                unreadable=1,
            )
        if not claims or verdicts is None:
            raw["claims"] = []
            hallucinated: bool | None = False
            if self.no_claims_as == "excluded":
                hallucinated = None
                raw["note"] = "the response makes no claim; excluded by no_claims_as='excluded'"
            return self._label(
                response, hallucinated, category=NO_CLAIMS, raw=json.dumps(raw, ensure_ascii=False)
            )
        raw["claims"] = [{"claim": c, "verdict": v} for c, v in zip(claims, verdicts, strict=True)]
        unsupported = sum(v == "unsupported" for v in verdicts)
        return self._label(
            response,
            unsupported > 0,
            score=unsupported / len(verdicts),
            category="unsupported" if unsupported else "supported",
            raw=json.dumps(raw, ensure_ascii=False),
        )


def _text(generation: Generation) -> str:
    return generation.texts[0] if generation.texts else ""
