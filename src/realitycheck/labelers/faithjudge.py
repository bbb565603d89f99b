"""``faithjudge``: a few-shot judge shown other responses to a source with their human annotations.

After FaithJudge ("Benchmarking LLM Faithfulness in RAG with Evolving
Leaderboards", seed paper 003, §5 and appendix A): to grade a response, an LLM
reads the source and up to ``k`` *other* responses written for the same source,
each with the verdict and annotations human reviewers gave it (FaithBench:
each annotator's marked span, label such as ``Unwanted.Intrinsic`` and note;
RAGTruth: each marked span, its type and the annotator's comment), then gives a
ternary verdict. The prompt (``prompts/faithjudge.v1.txt``) is this project's
own wording.

Where the annotations come from: a dataset that ships them lists, in each
example's ``meta["annotated_responses"]``, that source's responses with their
human annotations and a ternary human verdict
(:data:`realitycheck.datasets.faithbench.ANNOTATED`; ``faithbench`` and
``ragtruth`` do). The labeler protocol is unchanged: everything the judge
needs arrives with the example.

**Leave-one-out**: the response being judged is never shown. Its own entry
(same ``response_id``) is left out, and so is any entry whose text is the same
as the judged response's (its annotations would give the answer away). A
response that is not in the list (one generated later for the same source) is
shown up to ``k`` of all the annotated responses, which is how the FaithJudge
leaderboard grades new models. Which ``k``: the entries that follow the judged
response in the list, wrapping around (the first ``k`` for a response not in
it), so each annotated response is shown equally often and the choice is the
same on every run.

**Leakage, on request** (``include_self=true``, off by default): the judged
response's own entry, with the human annotations of the very response being
graded, is shown too, last and as one of the ``k``, after the first ``k - 1``
others. This is not a judge to use: it is the top point of FaithJudge's
#examples curve (paper 003, Figure 2, "10*": the judge is shown the annotations
of the summary it evaluates), an upper bound that measures how much the answer
given away helps. A response with no entry of its own is shown ``k`` others as
without the option. The parameter is in the spec (so in the key and every
cache key that includes the spec) whenever it is on.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from realitycheck.datasets.faithbench import ANNOTATED
from realitycheck.labelers._base import labeler
from realitycheck.labelers._judge import (
    INVALID,
    Judge,
    Unjudgeable,
    prompt_sha256_param,
    quote,
    substitute,
)
from realitycheck.params import InstanceOf, Interval, OneOf, param
from realitycheck.records import Example, Label, Response

if TYPE_CHECKING:
    from realitycheck.backends import CallCache

__all__ = ["BENIGN_POLICIES", "FaithJudge"]

TEMPLATE = "faithjudge.v1.txt"
BENIGN_POLICIES = ("hallucinated", "consistent", "excluded")
"""What a ``benign`` (benign-or-questionable) verdict becomes."""
_SHOWN = ("span", "source_span", "label", "note")


@labeler("faithjudge")
@dataclass(frozen=True, kw_only=True)
class FaithJudge(Judge):
    """An LLM grades a response after seeing other responses to its source, annotated by humans.

    ``category`` is the ternary verdict: ``consistent``, ``benign`` (benign or
    questionable: something the source does not say, but harmless, general
    knowledge or a gray area), ``unwanted`` (contradicts the source or adds
    unsupported information that matters), or ``invalid`` (no reply could be
    parsed). ``unwanted`` is hallucinated and ``consistent`` is not;
    ``benign`` follows ``benign_as``: ``hallucinated`` by default, as the
    paper scores FaithBench (Benign and Questionable counted as inconsistent,
    Tables 4-5), ``consistent``, or ``excluded`` (``hallucinated=None``, a
    note in ``raw``, no error). ``score`` in ``[0, 1]`` is the share of the
    replies that count as hallucinated (higher = more likely hallucinated).

    The prompt shows the source and up to ``k`` other responses to it with
    their human annotations, never the response judged (see the module
    documentation for which, and for where they come from). A response whose
    example carries no ``meta["annotated_responses"]`` (or a malformed one),
    has no context, or has empty text gets an error. See
    :class:`~realitycheck.labelers.Judge` for ``raw`` (here also ``shown``:
    the ids of the annotated responses the prompt showed), repeats and failures,
    e.g. ``faithjudge[judge=openai[model=gpt-4o-mini],k=9]``.

    Args:
        judge: The backend that grades (required), e.g. ``openai[model=gpt-4o-mini]``.
        k: Most annotated responses shown (0: none, a zero-shot judge; the
            paper shows all the others: 9 on FaithBench, 5 on RAGTruth).
        benign_as: What a ``benign`` verdict becomes: ``hallucinated``,
            ``consistent`` or ``excluded``.
        include_self: Also show the judged response's own annotated entry, as
            the last of the ``k`` (leakage: the upper point of the #examples
            curve, never a judge to rank; see the module documentation).
        invalid_as: What a label none of whose replies could be read becomes:
            ``excluded`` (the default: ``hallucinated=None``, the reason as error)
            or ``hallucinated``; the replies are counted as unreadable either way.
        repeats: How many times each response is graded; the majority decides.
        temperature: The judge's sampling temperature (0: greedy).
        seed: Seed of the first repeat; repeat k uses ``seed + k``.
        max_tokens: Most tokens of a reply.
        structured: Ask for a reply that follows a JSON Schema where the backend
            can constrain it (``openai`` in chat mode); ``False`` for servers that cannot.
        prompt_sha256: SHA-256 of the prompt template (set; written in the spec).
    """

    k: int = param(9, Interval(int, 0), doc="most annotated responses shown")
    benign_as: Literal["hallucinated", "consistent", "excluded"] = param(
        "hallucinated", OneOf(BENIGN_POLICIES)
    )
    include_self: bool = param(
        False, InstanceOf(bool), doc="also show the judged response's own annotation (leakage)"
    )
    prompt_sha256: str = prompt_sha256_param((TEMPLATE,))

    needs: ClassVar[frozenset[str]] = frozenset({"context"})
    verdicts: ClassVar[tuple[str, ...]] = ("unwanted", "benign", "consistent")
    hallucinated_verdicts: ClassVar[frozenset[str]] = frozenset({"unwanted"})
    field: ClassVar[str] = "verdict"

    def shots(self, response: Response, example: Example | None) -> list[Mapping[str, Any]]:
        """Return the annotated responses the prompt for ``response`` shows, in order.

        Up to ``k`` entries of the example's ``meta["annotated_responses"]``
        that carry a human verdict, never a response with the same text, and
        never ``response`` itself unless ``include_self`` (then its own entry
        comes last, after up to ``k - 1`` others).

        Raises:
            Unjudgeable: If the example carries no annotated responses, or a
                malformed list of them.
        """
        if example is None or ANNOTATED not in example.meta:
            raise Unjudgeable(
                f"the example carries no human annotations of other responses "
                f"(meta[{ANNOTATED!r}]); faithjudge needs a dataset that ships them, "
                "such as faithbench or ragtruth"
            )
        entries = example.meta[ANNOTATED]
        if not isinstance(entries, Sequence) or isinstance(entries, str):
            raise Unjudgeable(
                f"meta[{ANNOTATED!r}] of example {example.example_id!r} must be a list. "
                f"Got {type(entries).__name__} instead."
            )
        for i, entry in enumerate(entries):
            if not (
                isinstance(entry, Mapping)
                and all(isinstance(entry.get(f), str) for f in ("response_id", "text", "verdict"))
                and isinstance(entry.get("annotations", []), list)
            ):
                raise Unjudgeable(
                    f"meta[{ANNOTATED!r}][{i}] of example {example.example_id!r} must be an "
                    "object with string 'response_id', 'text' and 'verdict' and a list "
                    f"'annotations'. Got {entry!r:.200} instead."
                )
        ids = [entry["response_id"] for entry in entries]
        start = ids.index(response.response_id) + 1 if response.response_id in ids else 0
        text = response.text.strip()
        own = [
            entry
            for entry in entries
            if self.include_self
            and self.k > 0
            and entry["response_id"] == response.response_id
            and entry["verdict"] in self.verdicts
        ][:1]
        room = self.k - len(own)
        out: list[Mapping[str, Any]] = []
        for entry in [*entries[start:], *entries[:start]]:
            if len(out) >= room:
                break
            if (
                entry["response_id"] != response.response_id
                and entry["text"].strip() != text
                and entry["verdict"] in self.verdicts
            ):
                out.append(entry)
        return out + own

    def prompt(self, response: Response, example: Example | None) -> str:
        """Return the grading prompt for ``response``, with :meth:`shots` as the reviewed responses.

        Raises:
            Unjudgeable: If the example has no context or annotated responses,
                or the response is empty.
        """
        shown = self.shots(response, example)
        if example is None or not example.context.strip():
            raise Unjudgeable("no source (context) to grade against")
        if not response.text.strip():
            raise Unjudgeable("the response is empty")
        reviewed = [
            {
                "response": entry["text"],
                "human verdict": entry["verdict"],
                "annotations": [
                    {f: str(a.get(f, "")) for f in _SHOWN if a.get(f)}
                    for a in entry.get("annotations", [])
                    if isinstance(a, Mapping)
                ],
            }
            for entry in shown
        ]
        return substitute(
            TEMPLATE,
            task=quote(example.task),
            question=quote(example.question),
            source=quote(example.context),
            examples=_listing(reviewed),
            response=quote(response.text),
        )

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order, with the ids shown in ``raw["shown"]``.

        Args:
            responses: The responses to judge.
            examples: Their examples, by ``example_id``.
            cache: The run's call cache; every call goes through it.
        """
        out = []
        for response, got in zip(
            responses, super().label(responses, examples, cache=cache), strict=True
        ):
            if got.raw:  # the prompt was built, so were its shots
                raw = json.loads(got.raw)
                shots = self.shots(response, examples.get(response.example_id))
                raw["shown"] = [entry["response_id"] for entry in shots]
                got = dataclasses.replace(got, raw=json.dumps(raw, ensure_ascii=False))
            out.append(got)
        return out

    def outcome(self, verdict: str) -> bool | None:
        """Return whether ``verdict`` means hallucinated (``None``: left out by a policy)."""
        if verdict == "benign":
            return {"hallucinated": True, "consistent": False}.get(self.benign_as)
        return super().outcome(verdict)

    def note(self, verdict: str) -> str:
        """Return why ``verdict`` was left out, or ``""``."""
        if verdict == "benign" and self.benign_as == "excluded":
            return (
                "the judge found benign or questionable content; excluded by benign_as='excluded'"
            )
        return super().note(verdict) if verdict == INVALID else ""


def _listing(entries: Sequence[Mapping[str, Any]]) -> str:
    """Return ``entries`` as a JSON list with one entry a line."""
    if not entries:
        return "[]"
    return "[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in entries) + "\n]"
