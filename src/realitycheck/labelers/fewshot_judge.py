"""``fewshot_judge``: an LLM grades a QA answer after k worked examples from the calibration split.

The few-shot judge that Trivia++ ("Rethinking Evaluation for LLM
Hallucination Detection", seed paper 002) benchmarks beside a zero-shot LLM
judge and a prompt-optimized one: the judge reads ``k`` graded answers to
other questions of the same dataset, then the question, its reference answers
and the answer to grade, and gives a binary verdict. The worked examples are
responses of the run's calibration split graded by the ``reference`` labeler
(human labels by default), ``k / 2`` of each verdict, drawn with ``seed``,
never of the test split and never a response to the judged question
(:mod:`realitycheck.labelers._shots`). The prompt (``prompts/fewshot_qa.v1.txt``
with the ``match`` instruction) is this project's own wording.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from realitycheck.labelers._base import labeler
from realitycheck.labelers._fewshot import FRAME, ShotJudge, instruction_template
from realitycheck.labelers._judge import Unjudgeable, prompt_sha256_param
from realitycheck.labelers._shots import Draw, Labelled
from realitycheck.records import Example, Label, Response

if TYPE_CHECKING:
    from realitycheck.backends import CallCache

__all__ = ["FewShotJudge"]

INSTRUCTION = "match"
"""The instruction of ``fewshot_judge`` (:data:`realitycheck.labelers._fewshot.INSTRUCTIONS`)."""


@labeler("fewshot_judge")
@dataclass(frozen=True, kw_only=True)
class FewShotJudge(ShotJudge):
    """An LLM grades a QA answer as correct or incorrect after k graded examples of its dataset.

    The worked examples are responses of the run's calibration split with a
    ``reference`` verdict: ``k / 2`` hallucinated and ``k / 2`` not, drawn
    with ``seed`` from the judged response's dataset, never from the test
    split and never a response to the judged question. Every test response
    of a dataset sees the same examples; a calibration response whose
    question is among them sees the next ones in line. It labels within a run
    only (the label stage reads the run's ``reference`` labels); outside one,
    or on :meth:`label`, every label has no verdict and says so.

    ``category`` is ``correct``, ``incorrect`` (hallucinated; an answer that
    commits to no answer is incorrect) or ``invalid`` (no reply could be
    parsed); ``score`` in ``[0, 1]`` is the share of the replies that say
    incorrect (higher = more likely hallucinated). ``raw`` also holds
    ``shown`` (the response ids of the worked examples, in the order shown)
    and ``split`` (of the judged response). A response without references or
    with empty text, or of a dataset whose calibration split holds fewer than
    ``k / 2`` graded responses of a verdict, gets an error. See
    :class:`~realitycheck.labelers.Judge` for the rest of ``raw``, repeats
    and failures, e.g. ``fewshot_judge[judge=openai[model=gpt-4o-mini],k=6]``.

    Args:
        judge: The backend that grades (required), e.g. ``openai[model=gpt-4o-mini]``.
        k: Worked examples shown, an even number: ``k / 2`` of each verdict.
        reference: The labeler whose verdicts in the run grade the worked
            examples (``human``, ``human:<annotator>``, a judge key…).
        calibration_fraction: Share of examples in the calibration split (the
            split of evaluate, by example id).
        invalid_as: What a label none of whose replies could be read becomes:
            ``excluded`` (the default: ``hallucinated=None``, the reason as error)
            or ``hallucinated``; the replies are counted as unreadable either way.
        repeats: How many times each response is graded; the majority decides.
        temperature: The judge's sampling temperature (0: greedy).
        seed: Seed of the draw of the worked examples, and of the first
            repeat (repeat k uses ``seed + k``).
        max_tokens: Most tokens of a reply.
        structured: Ask for a reply that follows a JSON Schema where the backend
            can constrain it (``openai`` in chat mode); ``False`` for servers that cannot.
        prompt_sha256: SHA-256 of the prompt templates (set; written in the spec).
    """

    prompt_sha256: str = prompt_sha256_param((FRAME, instruction_template(INSTRUCTION)))

    def shots(
        self,
        response: Response,
        example: Example,
        pool: Mapping[str, Sequence[Labelled]],
        draws: dict[str, Draw] | None = None,
    ) -> list[Labelled]:
        """Return the worked examples shown with ``response``, in order.

        Args:
            response: The judged response.
            example: Its example.
            pool: Per dataset, the labelled calibration responses.
            draws: The draws made so far, by dataset (filled here): pass one
                dict for many responses so each dataset's draw is made once.

        Raises:
            Unjudgeable: The dataset's calibration pool is short of a verdict.
        """
        draws = {} if draws is None else draws
        if example.dataset not in draws:
            members = pool.get(example.dataset)
            if not members:
                raise Unjudgeable(self.no_pool(example.dataset))
            draws[example.dataset] = Draw.of(members, self.k, self.seed)
        return draws[example.dataset].take(avoid={example.example_id})

    def label_with(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        pool: Mapping[str, Sequence[Labelled]],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order, with worked examples drawn from ``pool``.

        Args:
            responses: The responses to judge.
            examples: Their examples, by ``example_id``.
            pool: Per dataset, the labelled calibration responses
                (:func:`~realitycheck.labelers._shots.calibration_pool`).
            cache: The run's call cache; every call goes through it.
        """
        out: dict[int, Label] = {}
        asked: dict[int, tuple[str, list[Labelled]]] = {}
        draws: dict[str, Draw] = {}
        for i, response in enumerate(responses):
            try:
                example = self.check(response, examples.get(response.example_id))
                shots = self.shots(response, example, pool, draws)
            except Unjudgeable as exc:
                out[i] = self._label(response, None, error=str(exc))
                continue
            asked[i] = (self.render(response, example, shots, INSTRUCTION), shots)
        labels = self.ask([(responses[i], prompt) for i, (prompt, _) in asked.items()], cache)
        sides = self.split(responses)
        for (i, (_, shots)), got in zip(asked.items(), labels, strict=True):
            shown = [s.response.response_id for s in shots]
            out[i] = self.annotated(got, {"shown": shown, "split": sides[i]})
        return [out[i] for i in range(len(responses))]

    def planned_prompts(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        pool: Mapping[str, Sequence[Labelled]],
    ) -> tuple[list[str], list[str | None]]:
        """Return no search prompts and, per response, its prompt (``None``: no verdict)."""
        prompts: list[str | None] = []
        draws: dict[str, Draw] = {}
        for response in responses:
            try:
                example = self.check(response, examples.get(response.example_id))
                shots = self.shots(response, example, pool, draws)
            except Unjudgeable:
                prompts.append(None)
                continue
            prompts.append(self.render(response, example, shots, INSTRUCTION))
        return [], prompts
