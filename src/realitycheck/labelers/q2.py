"""Q² (Honovich et al., 2021): questions about the response, answered from the knowledge.

"Q²: Evaluating Factual Consistency in Knowledge-Grounded Dialogues via
Question Generation and Question Answering" (EMNLP 2021). For each answer
span of the response, a question generator writes questions whose answer is
that span; an extractive reader answers the question from the response (the
question is kept only when it gives the span back) and from the knowledge;
the two answers are compared by token F1, and where they differ an NLI
classifier judges whether they mean the same. Q² is the mean over the
response's questions; paper 001 (``001_aae339a292aa9c60``, Table 1,
"Q² NLI") uses it as a hallucination metric.

What follows the authors' code (``pipeline/run_pipeline.py``,
``pipeline/question_generation.py``, ``pipeline/score.py``, ``run_nli.py``):
the generator's input ``answer: <span>  context: <response> </s>``
(``prompts/q2_question.v1.txt``); beam search with 5 beams, 5 questions
returned, no repeated 3-gram, early stopping, ``question: `` removed from
the front; one question per span, the first of the beam that is valid
(``--q_per_cand single``); personal questions removed (``--personal
remove``); a question is valid when the reader's answer from the response
equals the span after Q²'s normalisation (:func:`q2_normalize`); the
knowledge answer's token F1 to the span (:func:`q2_f1`), 0 when the reader
finds no answer in the knowledge; for ``0 <= F1 < 1`` the NLI pair
(premise ``"<question> <knowledge answer>."``, hypothesis ``"<question>
<span>."``) turns the F1 into 1 on entailment and 0 on contradiction and
keeps it otherwise; a response with no valid question gets the end-to-end
NLI fallback (premise the lower-cased knowledge, hypothesis the response):
1 on entailment, 0 on contradiction, 0.5 otherwise.

What differs, and why:

* **Answer spans** (:func:`answer_candidates`): Q² takes spaCy's named
  entities and noun chunks (``en_core_web_sm``). No tagger or parser is a
  dependency here, so spans come from rules: runs of capitalised words or
  numbers (name-like spans; a lone capitalised word that starts a sentence
  is left out, as its capital says nothing), then a determiner or
  possessive with the run of content words after it (noun-phrase-like
  spans). Both miss some spans spaCy finds and add some it would not.
* **Personal questions**: Q² drops a question whose subject is *I* or
  *you* or that has *my* or *your* as a possessive (a dependency parse);
  here any question containing one of those four words is dropped.
* **Reader**: Q² takes independent arg-maxes of the start and end scores
  over the whole input and decodes the tokens between them, which may be
  ``[CLS]`` (no answer) or question tokens. Here the arg-maxes are taken
  over the real tokens, and a span that is empty or leaves the text (the
  ``[CLS]`` no-answer position, the question, a separator) is no answer;
  the answer is the text's characters under the span (the tokenizer's
  offsets). A text longer than the reader's limit is cut at its end
  (``only_second``), with no sliding window.
* **Models**: the published pipeline used ``ktrapeznikov/albert-xlarge-v2-squad-v2``
  as the reader and AllenNLP's RoBERTa-large SNLI model for NLI; any
  SQuAD 2.0 extractive model and any pair classifier with the ``pairs``
  capability fit here. The NLI class is the classifier's most probable one
  (:meth:`~realitycheck.backends.PairScore.top`); a class other than
  entailment or contradiction (neutral, not-entailment) is "otherwise".
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, ClassVar

from realitycheck.errors import InvalidInputError
from realitycheck.labelers._base import Labeler, labeler
from realitycheck.labelers._checkpoints import (
    Failed,
    extract_answers,
    in_batches,
    load,
    model_limit,
)
from realitycheck.labelers._judge import load_template, prompt_sha256_param
from realitycheck.labelers._q2_text import answer_candidates, personal, q2_f1, q2_normalize
from realitycheck.labelers._similarity import labels_from_similarity
from realitycheck.params import (
    InstanceOf,
    Interval,
    NonEmptyStr,
    SequenceOf,
    as_tuple,
    param,
    required,
)
from realitycheck.records import Example, Label, Response
from realitycheck.registry import nested

if TYPE_CHECKING:
    from realitycheck.backends import Backend, CallCache, PairScore

__all__ = [
    "Q2",
    "QUESTION_TEMPLATE",
    "QuestionScore",
    "answer_candidates",
    "personal",
    "q2_f1",
    "q2_normalize",
    "question_input",
]

QUESTION_TEMPLATE = "q2_question.v1.txt"
"""The question generator's input (``$answer``, ``$context``)."""
BEAMS = 5
"""Beams of the question generator, and questions it returns per span."""
NO_REPEAT_NGRAM = 3
"""The generator repeats no n-gram of this size."""
SCORES = {"entailment": 1.0, "contradiction": 0.0}
"""What an NLI verdict makes of a question's (or the fallback's) value."""
NEUTRAL_FALLBACK = 0.5
"""The fallback's value when the NLI class is neither entailment nor contradiction."""


def question_input(span: str, response: str) -> str:
    """Return the question generator's input for one answer span of the response."""
    template = string.Template(load_template(QUESTION_TEMPLATE).rstrip("\n"))
    return template.substitute(answer=span, context=response)


@dataclass(frozen=True)
class QuestionScore:
    """One answer span's valid question and what it scored (kept in the label's ``raw``).

    Attributes:
        answer: The response's span, which the reader gave back from the response.
        question: The first valid question of the beam.
        knowledge_answer: The reader's answer from the knowledge (``None``: no answer).
        f1: :func:`q2_f1` of the span and the knowledge answer (0 without one).
        nli: The NLI class of the answer pair, where NLI was asked (``""`` otherwise).
        value: The question's Q² value: 1 on entailment, 0 on contradiction, else ``f1``.
    """

    answer: str
    question: str
    knowledge_answer: str | None
    f1: float
    nli: str = ""
    value: float = 0.0


@dataclass(frozen=True)
class _Plan:
    knowledge: str
    text: str
    spans: tuple[str, ...]


@dataclass(frozen=True)
class _Outcome:
    """A response's spans with a valid question, or why it has no value."""

    plan: _Plan | None
    scores: tuple[QuestionScore, ...] = ()
    error: str = ""
    failed: bool = False


@labeler("q2")
@dataclass(frozen=True, kw_only=True)
class Q2(Labeler):
    """Q²: one minus the share of questions about the response that the knowledge answers alike.

    For each answer span of the response (:func:`answer_candidates`), the
    ``generator`` (a T5 question generator; pass
    ``generator=mrm8488/t5-base-finetuned-question-generation-ap``) writes 5
    questions by beam search; the first that is not personal and that the
    ``reader`` (a SQuAD 2.0 extractive model; pass
    ``reader=deepset/roberta-base-squad2``) answers from the response with
    the span itself is the span's question. Its value is the token F1 of the
    span and the reader's answer from the knowledge (the example's context;
    0 when the knowledge gives no answer); where ``0 <= F1 < 1`` the ``judge``
    classifier turns it into 1 (entailment) or 0 (contradiction). Q² is the
    mean over the spans with a question; a response with none gets the
    end-to-end NLI value (1, 0, or 0.5 when neutral). The rules, and where
    they differ from the authors' code, are in the module documentation.

    ``score = 1 - Q²`` in [0, 1], higher = more likely hallucinated;
    ``hallucinated = Q² < threshold`` (0.5, not tuned); ``raw`` is JSON:
    ``q2``, ``q2_f1`` (the same without NLI on the answer pairs: the
    authors' ``Q2_no_nli``), ``fallback`` (the NLI class when no question
    was valid) and each span's ``questions`` (:class:`QuestionScore`).
    Without ``judge``, Q² is the mean F1 (token-level Q²) and a response with
    no valid question gets ``hallucinated=None`` saying so. The generated
    questions and the NLI answers go through the run's call cache. An
    example without context, an empty response, or a model call that failed
    gives ``hallucinated=None`` with the reason. Needs the ``hf`` extra.

    Args:
        generator: The question generator, a T5 checkpoint (folder or hub id).
        reader: The extractive question-answering checkpoint (SQuAD 2.0), with a fast tokenizer.
        judge: The NLI classifier, a backend with the ``pairs`` capability (e.g.
            ``hf[model=PATH]``; ``judge`` is every component's name for the model
            it asks); none = Q² without NLI.
        labels: The NLI classifier's label names in output order, when its
            config lacks them (empty = its ``id2label``).
        threshold: Q² below which a response is labelled hallucinated, in [0, 1].
        max_question_tokens: Most decoder tokens of a question, its start
            token included (Q²'s ``max_length=128``).
        device: ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``…
        batch_size: Inputs per forward pass (questions per ``generate`` call).
    """

    generator: str = required(NonEmptyStr(), doc="the question generator")
    reader: str = required(NonEmptyStr(), doc="the extractive reader")
    judge: Backend | None = nested("backends", doc="the NLI classifier (pairs)")
    labels: tuple[str, ...] = param((), SequenceOf(InstanceOf(str)), convert=as_tuple)
    threshold: float = param(0.5, Interval(float, 0, 1))
    max_question_tokens: int = param(128, Interval(int, 2))
    prompt_sha256: str = prompt_sha256_param((QUESTION_TEMPLATE,))
    device: str = param("auto", NonEmptyStr(), in_key=False)
    batch_size: int = param(8, Interval(int, 1), in_key=False)
    needs: ClassVar[frozenset[str]] = frozenset({"context"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.judge is not None:
            from realitycheck.backends import require_pairs

            require_pairs(self.judge, self.name)

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order."""
        plans = [_plan(r, examples.get(r.example_id)) for r in responses]
        spans = sorted({(s, p.text) for p in plans if isinstance(p, _Plan) for s in p.spans})
        asked = dict(
            zip(spans, self.questions([question_input(*x) for x in spans], cache), strict=True)
        )
        # Every question of every span, answered from the response: the first valid one counts.
        kept = {
            (q, text)
            for (_, text), qs in asked.items()
            if not isinstance(qs, Failed)
            for q in qs
            if not personal(q)
        }
        read = dict(zip(sorted(kept), self.answers(sorted(kept)), strict=True))
        chosen = {x: _first_valid(x[0], x[1], asked[x], read) for x in spans}
        wanted = sorted(
            {
                (c, p.knowledge)
                for p in plans
                if isinstance(p, _Plan)
                for s in p.spans
                if isinstance(c := chosen[s, p.text], str)
            }
        )
        known = dict(zip(wanted, self.answers(wanted), strict=True))
        outcomes = [self._outcome(p, chosen, known) for p in plans]
        verdicts = self._nli(outcomes, cache)
        return [self._verdict(r, o, verdicts) for r, o in zip(responses, outcomes, strict=True)]

    def _outcome(
        self,
        plan: _Plan | str,
        chosen: Mapping[tuple[str, str], str | None | Failed],
        known: Mapping[tuple[str, str], str | None | Failed],
    ) -> _Outcome:
        """Return the response's spans with a valid question and their F1, or why it has none."""
        if isinstance(plan, str):
            return _Outcome(None, error=plan)
        scores = []
        for span in plan.spans:
            question = chosen[span, plan.text]
            if isinstance(question, Failed):
                error = f"the question generator or reader failed: {question.error}"
                return _Outcome(None, error=error, failed=True)
            if question is None:
                continue
            answer = known[question, plan.knowledge]
            if isinstance(answer, Failed):
                error = f"the reader failed on the knowledge: {answer.error}"
                return _Outcome(None, error=error, failed=True)
            f1 = q2_f1(span, answer) if answer is not None else 0.0
            scores.append(QuestionScore(span, question, answer, f1, value=f1))
        return _Outcome(plan, tuple(scores))

    def _nli(
        self,
        outcomes: Sequence[_Outcome],
        cache: CallCache | None,
    ) -> dict[tuple[str, str], PairScore]:
        """Return the NLI answer of every pair Q² asks about (none without ``nli``)."""
        if self.judge is None:
            return {}
        from realitycheck.backends import cached_pairs

        pairs: set[tuple[str, str]] = set()
        for outcome in outcomes:
            if outcome.plan is None:
                continue
            pairs.update(_answer_pair(s) for s in outcome.scores if _needs_nli(s))
            if not outcome.scores:
                pairs.add(_fallback_pair(outcome.plan))
        wanted = sorted(pairs)
        answers = cached_pairs(self.judge, wanted, labels=self.labels, cache=cache)
        return dict(zip(wanted, answers, strict=True))

    def _verdict(
        self,
        response: Response,
        outcome: _Outcome,
        verdicts: Mapping[tuple[str, str], PairScore],
    ) -> Label:
        plan, scores = outcome.plan, list(outcome.scores)
        if plan is None:
            return self._label(response, None, error=outcome.error, failed=outcome.failed)
        fallback = ""
        if self.judge is not None:
            asked = [_fallback_pair(plan)] if not scores else []
            asked += [_answer_pair(s) for s in scores if _needs_nli(s)]
            failed = [verdicts[p].error for p in asked if verdicts[p].error]
            if failed:
                error = f"the NLI classifier failed: {failed[0]}"
                return self._label(response, None, error=error, failed=True)
            scores = [
                _with_nli(s, verdicts[_answer_pair(s)].top()) if _needs_nli(s) else s
                for s in scores
            ]
            fallback = "" if scores else verdicts[_fallback_pair(plan)].top()
        elif not scores:
            return self._label(
                response,
                None,
                error="no question about the response passed Q²'s checks; Q²'s NLI fallback "
                "needs the judge parameter (the NLI classifier)",
            )
        if scores:
            q2 = sum(s.value for s in scores) / len(scores)
            q2_f1_mean = sum(s.f1 for s in scores) / len(scores)
        else:
            q2 = q2_f1_mean = SCORES.get(fallback, NEUTRAL_FALLBACK)
        raw = json.dumps(
            {
                "q2": q2,
                "q2_f1": q2_f1_mean,
                "fallback": fallback or None,
                "questions": [asdict(s) for s in scores],
            },
            ensure_ascii=False,
        )
        (label,) = labels_from_similarity(
            self, [response], [q2], [""], threshold=self.threshold, name="q2", raw=[raw]
        )
        return label

    def questions(
        self, inputs: Sequence[str], cache: CallCache | None = None
    ) -> list[list[str] | Failed]:
        """Return the generator's ``BEAMS`` questions for each input, in beam order.

        Each input's questions are stored in ``cache`` (addressed by the
        generator, its decoding settings and the input) and read from it
        before anything is generated.

        Raises:
            MissingDependencyError: If torch or transformers is missing.
            InvalidInputError: If the generator cannot be loaded.
        """
        keys = [self._question_key(text) for text in inputs]
        stored = cache.get_values(keys) if cache is not None and keys else {}
        todo = [text for text, key in zip(inputs, keys, strict=True) if key not in stored]
        fresh: dict[str, list[str] | Failed] = {}
        if todo:
            found = self._generate(todo)
            fresh = dict(zip(todo, found, strict=True))
            for text, questions in fresh.items():
                if cache is not None and not isinstance(questions, Failed):
                    value = json.dumps(questions, ensure_ascii=False)
                    cache.put_value(self._question_key(text), value, backend=self.key)
        return [
            json.loads(stored[key]) if key in stored else fresh[text]
            for text, key in zip(inputs, keys, strict=True)
        ]

    def _question_key(self, text: str) -> str:
        settings = {
            "generator": self.generator,
            "beams": BEAMS,
            "no_repeat_ngram_size": NO_REPEAT_NGRAM,
            "max_length": self.max_question_tokens,
        }
        blob = json.dumps({"q2_questions": settings, "input": text}, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _generate(self, inputs: Sequence[str]) -> list[list[str] | Failed]:
        net, tokenizer = load("seq2seq", self.generator, self.device, owner=self.name)

        def run(batch: list[str]) -> list[list[str]]:
            import torch

            enc = tokenizer(batch, padding=True, return_tensors="pt").to(net.device)
            with torch.inference_mode():
                ids = net.generate(
                    **enc,
                    do_sample=False,
                    num_beams=BEAMS,
                    num_return_sequences=BEAMS,
                    no_repeat_ngram_size=NO_REPEAT_NGRAM,
                    early_stopping=True,
                    max_length=self.max_question_tokens,
                )
            texts = tokenizer.batch_decode(ids, skip_special_tokens=True)
            clean = [t.replace("question: ", "", 1).strip() for t in texts]
            return [clean[i : i + BEAMS] for i in range(0, len(clean), BEAMS)]

        return in_batches(inputs, run, batch_size=self.batch_size, size=len)

    def answers(self, pairs: Sequence[tuple[str, str]]) -> list[str | None | Failed]:
        """Return the reader's answer to each (question, text) pair; ``None`` = no answer.

        Raises:
            MissingDependencyError: If torch or transformers is missing.
            InvalidInputError: If the reader cannot be loaded or has no fast tokenizer.
        """
        if not pairs:
            return []
        net, tokenizer = load("reader", self.reader, self.device, owner=self.name, field="reader")
        if not getattr(tokenizer, "is_fast", False):
            raise InvalidInputError(
                f"q2: the reader {self.reader!r} has no fast tokenizer; the answer's "
                "characters are found with the fast tokenizer's offsets.",
                field="reader",
            )
        limit = model_limit(net, tokenizer)

        def run(batch: list[tuple[str, str]]) -> list[str | None]:
            return extract_answers(net, tokenizer, batch, limit)

        size = lambda pair: len(pair[0]) + len(pair[1])  # noqa: E731
        return in_batches(pairs, run, batch_size=self.batch_size, size=size)


def _plan(response: Response, example: Example | None) -> _Plan | str:
    """Return what Q² asks about the response, or why it cannot."""
    if example is None:
        return f"example {response.example_id!r} was not given"
    if not example.context.strip():
        return "the example has no context"
    if not response.text.strip():
        return "the response is empty"
    return _Plan(example.context, response.text, tuple(answer_candidates(response.text)))


def _first_valid(
    span: str,
    text: str,
    questions: list[str] | Failed,
    read: Mapping[tuple[str, str], str | None | Failed],
) -> str | None | Failed:
    """Return the first question the reader answers from ``text`` with ``span``, if any."""
    if isinstance(questions, Failed):
        return questions
    for question in questions:
        if personal(question):
            continue
        answer = read[question, text]
        if isinstance(answer, Failed):
            return answer
        if answer is not None and q2_normalize(answer) == q2_normalize(span):
            return question
    return None


def _needs_nli(score: QuestionScore) -> bool:
    return score.knowledge_answer is not None and 0.0 <= score.f1 < 1.0


def _answer_pair(score: QuestionScore) -> tuple[str, str]:
    return (
        f"{score.question} {score.knowledge_answer}.",
        f"{score.question} {score.answer}.",
    )


def _fallback_pair(plan: _Plan) -> tuple[str, str]:
    return plan.knowledge.lower(), plan.text


def _with_nli(score: QuestionScore, top: str) -> QuestionScore:
    value = SCORES.get(top, score.f1)
    return QuestionScore(
        score.answer, score.question, score.knowledge_answer, score.f1, nli=top, value=value
    )
