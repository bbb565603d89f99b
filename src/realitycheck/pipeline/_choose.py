"""The choose stage: multiple-choice questions answered by likelihood, one response per variant.

For each MCQ example and prompt variant, every option is scored as a
continuation of the variant's prompt (:func:`realitycheck.generation.render`)
through the shared call cache, and the best option under the plan's
normalisation is chosen. Each (example, variant) gets the response id
``<example_id>/<variant hash>/<choice hash>`` (short hashes of the variant key
and of the backend and plan keys) and:

* ``text``: the chosen option; ``prompt_variant``: the variant's key;
  ``decoding``: ``loglik``;
* ``meta``: ``chosen`` (index in the example's ``choices``), ``gold``,
  ``normalisation``, ``template``, ``variant``, ``options`` (per original
  index: ``sum``, ``per_token``, ``per_char``, ``n_tokens``, ``n_chars``),
  ``order`` (the options' indices in the prompt's order), ``true_mass``
  (TruthfulQA's MC2 score), ``prompt`` (the context text the options
  continue, so the run can be rebuilt), ``demos`` (ids) and ``paraphrase``
  where a variant made one; with a retriever in the plan, ``passages`` (the
  ids of the passages shown before the question, best first) and
  ``retriever`` (its key), neither without one. The retriever is part of the
  plan's key, so answers with and without retrieval get different ids;
* ``features``: the chosen option's token features in the generate stage's
  layout (``{"best": {"token_logprobs", ...}}``, see
  :mod:`realitycheck.pipeline._choice_features`): its token log-probs as
  the choice scored them on every backend, and its tokens, token entropies
  and (with ``top_logprobs``) alternatives where the backend can read a
  fixed answer (``hf``); what could not be read is named, with the reason,
  in ``meta["unsupported"]``. Perplexity and entropy detectors score the
  answers from them;

plus a label by the ``gold`` labeler: ``hallucinated`` is ``True`` when the
chosen option is not a correct one (category ``correct`` / ``incorrect``).
Batches are stored as they finish; a rerun skips stored responses and pays
for no pair the cache holds. Questions a variant skips are counted, with the
first reason, in the manifest (``config.choice``) and in the report.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from realitycheck.backends import Backend, CallCache, cached_loglik_tokens, require
from realitycheck.errors import InvalidInputError
from realitycheck.executors import DEFAULT_CHOICE_BATCH_SIZE
from realitycheck.generation import (
    ChoicePlan,
    McqPrompt,
    OptionScore,
    PromptVariant,
    Skipped,
    base_prompt,
    choose_option,
    render,
    true_mass,
)
from realitycheck.params import InstanceOf, Interval, SequenceOf, check_arg
from realitycheck.pipeline._choice_features import ChosenFeatures, chosen_features
from realitycheck.pipeline._retrieval import retrieval_meta, retrieve
from realitycheck.pipeline._stage_entry import stage_entry
from realitycheck.pipeline._unsupported import UNSUPPORTED
from realitycheck.progress import NullProgress, Progress
from realitycheck.records import Example, Label, Response
from realitycheck.retrievers import Passage
from realitycheck.store import RunStore

__all__ = ["GOLD_LABELER", "ChoiceReport", "check_questions", "choice_key", "choose"]

GOLD_LABELER = "gold"
"""The labeler key of the correctness labels the choose stage writes."""
_VARIANTS = SequenceOf(InstanceOf(PromptVariant), min_length=1)


@dataclass(kw_only=True)
class ChoiceReport:
    """What one choose call did.

    Attributes:
        choice: The hash that identifies the (backend, plan) pair in response ids.
        computed: Responses written now.
        reused: Responses already stored (skipped).
        skipped: Per variant key, questions it could not apply to, and the first reason.
        pairs_scored: (prompt, option) pairs sent to the backend (0 on a cached rerun).
        options_read: Chosen options teacher-forced for their token features
            (0 on a cached rerun, and on a backend that cannot).
    """

    choice: str
    computed: int = 0
    reused: int = 0
    skipped: dict[str, dict[str, Any]] = field(default_factory=dict)
    pairs_scored: int = 0
    options_read: int = 0


def choice_key(backend: Backend, plan: ChoicePlan) -> str:
    """Return the 12-hex-digit hash of the backend and plan keys (part of response ids)."""
    text = json.dumps(
        {"backend": backend.key, "version": backend.version, "plan": plan.key}, sort_keys=True
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _short(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def check_questions(examples: Sequence[Example]) -> None:
    """Fail before any call on a question that cannot be scored, naming it.

    Raises:
        InvalidInputError: A non-``mcq`` example, fewer than two options, an
            empty option, a gold index outside the options, or a repeated id.
    """
    seen: set[str] = set()
    for e in examples:
        where = f"Example {e.example_id!r} of {e.dataset!r}"
        if e.example_id in seen:
            raise InvalidInputError(f"{where} occurs twice in the input of choose.")
        seen.add(e.example_id)
        if e.task != "mcq":
            raise InvalidInputError(f"{where} has task {e.task!r}; choose answers mcq only.")
        if len(e.choices) < 2:
            raise InvalidInputError(f"{where} has {len(e.choices)} options; it needs two.")
        empty = [i for i, c in enumerate(e.choices) if not c.strip()]
        if empty:
            raise InvalidInputError(f"{where}: option {empty[0]} is empty; it cannot be scored.")
        gold = e.meta.get("gold")
        if not gold or any(not 0 <= int(g) < len(e.choices) for g in gold):
            raise InvalidInputError(
                f"{where}: meta['gold'] must list indices among its {len(e.choices)} "
                f"options. Got {gold!r} instead."
            )


@dataclass(frozen=True)
class _Job:
    example: Example
    variant: PromptVariant
    prompt: McqPrompt
    response_id: str


def _jobs(
    examples: Sequence[Example],
    pool: Mapping[str, Sequence[Example]],
    variants: Sequence[PromptVariant],
    plan: ChoicePlan,
    key: str,
    done: set[str],
    report: ChoiceReport,
    cache: CallCache | None,
) -> list[_Job]:
    jobs = []
    retrieved: dict[str, tuple[Passage, ...]] = {}
    for v in variants:
        ids = {e.example_id: f"{e.example_id}/{_short(v.key)}/{key}" for e in examples}
        todo = [e for e in examples if ids[e.example_id] not in done]
        report.reused += len(examples) - len(todo)
        missing = [e for e in todo if e.example_id not in retrieved]
        retrieved.update(retrieve(plan.retriever, missing))
        bases = [
            base_prompt(e, pool.get(e.dataset, ()), plan.shots, retrieved.get(e.example_id, ()))
            for e in todo
        ]
        outcomes = v.apply(bases, todo, pool=pool, cache=cache) if todo else []
        for e, outcome in zip(todo, outcomes, strict=True):
            if isinstance(outcome, Skipped):
                entry = report.skipped.setdefault(v.key, {"questions": 0, "reason": ""})
                entry["questions"] += 1
                entry["reason"] = entry["reason"] or f"{e.example_id}: {outcome.reason}"
                continue
            jobs.append(_Job(e, v, outcome, ids[e.example_id]))
    return jobs


@dataclass(frozen=True)
class _Choice:
    """One job's options scored, the option chosen, and its continuation and token log-probs."""

    job: _Job
    context: str
    scores: list[OptionScore]
    chosen: int
    continuation: str
    values: tuple[float, ...]


def _choice(
    job: _Job,
    values: Sequence[tuple[float, ...]],
    rendered: tuple[str, list[str]],
    plan: ChoicePlan,
) -> _Choice:
    example, prompt = job.example, job.prompt
    scores = sorted(
        (
            OptionScore(
                index=original,
                loglik=float(sum(v)),
                n_tokens=len(v),
                n_chars=1 if plan.template == "letters" else len(example.choices[original]),
            )
            for original, v in zip(prompt.order, values, strict=True)
        ),
        key=lambda s: s.index,
    )
    chosen = choose_option(scores, plan.normalisation)
    position = prompt.order.index(chosen)
    context, continuations = rendered
    return _Choice(job, context, scores, chosen, continuations[position], values[position])


def _answer(
    choice: _Choice, features: ChosenFeatures, plan: ChoicePlan, model: str
) -> tuple[Response, Label]:
    job, scores, chosen = choice.job, choice.scores, choice.chosen
    example, prompt, context = job.example, job.prompt, choice.context
    gold = [int(g) for g in example.meta["gold"]]
    meta: dict[str, Any] = {
        "chosen": chosen,
        "gold": gold,
        "normalisation": plan.normalisation,
        "template": plan.template,
        "variant": job.variant.key,
        "options": [s.as_dict() for s in scores],
        "order": list(prompt.order),
        "true_mass": true_mass([s.loglik for s in scores], gold),
        "prompt": context,
        "demos": list(prompt.demo_ids),
    }
    if prompt.paraphrased:
        meta["paraphrase"] = prompt.question
    meta.update(retrieval_meta(plan.retriever, [p.passage_id for p in prompt.passages]))
    if features.unsupported:
        meta[UNSUPPORTED] = features.unsupported
    response = Response(
        response_id=job.response_id,
        example_id=example.example_id,
        model=model,
        text=example.choices[chosen],
        prompt_variant=job.variant.key,
        decoding="loglik",
        features=features.features,
        meta=meta,
    )
    correct = chosen in gold
    label = Label(
        response_id=job.response_id,
        labeler=GOLD_LABELER,
        hallucinated=not correct,
        category="correct" if correct else "incorrect",
        raw=json.dumps({"chosen": chosen, "gold": gold}),
        spec=json.dumps({"name": GOLD_LABELER, "params": {}, "version": "1"}),
    )
    return response, label


def choose(
    store: RunStore,
    examples: Sequence[Example],
    backend: Backend,
    plan: ChoicePlan,
    variants: Sequence[PromptVariant],
    *,
    cache: CallCache | None = None,
    demos: Sequence[Example] | None = None,
    batch_size: int = DEFAULT_CHOICE_BATCH_SIZE,
    progress: Progress | None = None,
) -> ChoiceReport:
    """Answer every MCQ example under every variant by likelihood, resuming a stopped run.

    Args:
        store: The run; examples not stored yet are added.
        examples: The questions (task ``mcq``).
        backend: A backend with the ``loglik`` capability.
        plan: Normalisation, template and fixed demonstrations.
        variants: The prompt variants (at least one; ``default`` for the base prompt).
        cache: The shared call cache (``None``: no cache).
        demos: The pool demonstrations are drawn from (default: ``examples``).
        batch_size: (example, variant) pairs per stored batch.
        progress: Progress seam (one step per pair of a batch).

    Returns:
        Counts of responses written, reused and skipped, and the pairs scored.

    Raises:
        InvalidInputError: Before any call: the backend cannot score
            continuations, or a question cannot be scored.
    """
    check_arg(backend, InstanceOf(Backend), name="backend", owner="choose")
    check_arg(plan, InstanceOf(ChoicePlan), name="plan", owner="choose")
    check_arg(variants, _VARIANTS, name="variants", owner="choose")
    check_arg(batch_size, Interval(int, 1), name="batch_size", owner="choose")
    require({"loglik"}, backend, who="choose")
    check_questions(examples)
    backend.loglik_tokens([])  # a backend that cannot score in its mode fails here, unpaid
    key = choice_key(backend, plan)
    pool: dict[str, list[Example]] = {}
    for e in examples if demos is None else demos:
        pool.setdefault(e.dataset, []).append(e)
    done = {rid for (rid,) in store.keys("responses", ["response_id"])}
    report = ChoiceReport(choice=key)
    jobs = _jobs(examples, pool, variants, plan, key, done, report, cache)
    stored = {eid for (eid,) in store.keys("examples", ["example_id"])}
    store.append([e for e in examples if e.example_id not in stored])
    model = str(getattr(backend, "model", "") or backend.key)
    with (progress or NullProgress()).task(f"choose {backend.key}", len(jobs)) as task:
        for start in range(0, len(jobs), batch_size):
            batch = jobs[start : start + batch_size]
            rendered = [render(j.prompt, j.example.choices, plan.template) for j in batch]
            pairs = [(context, c) for context, conts in rendered for c in conts]
            values, sent = cached_loglik_tokens(backend, pairs, cache=cache)
            report.pairs_scored += sent
            choices, offset = [], 0
            for job, text in zip(batch, rendered, strict=True):
                part = values[offset : offset + len(text[1])]
                offset += len(text[1])
                choices.append(_choice(job, part, text, plan))
            features, read = chosen_features(
                backend,
                [(c.context, c.continuation, c.values) for c in choices],
                top_logprobs=plan.top_logprobs,
                cache=cache,
            )
            report.options_read += read
            records: list[Response | Label] = []
            for choice, chosen in zip(choices, features, strict=True):
                records.extend(_answer(choice, chosen, plan, model))
            store.append([r for r in records if isinstance(r, Response)])
            store.append([r for r in records if isinstance(r, Label)])
            report.computed += len(batch)
            task.advance(len(batch))
    store.compact("responses")
    store.compact("labels")
    store.compact("examples")
    _record(store, backend, plan, variants, key, examples, report)
    return report


def _record(
    store: RunStore,
    backend: Backend,
    plan: ChoicePlan,
    variants: Sequence[PromptVariant],
    key: str,
    examples: Sequence[Example],
    report: ChoiceReport,
) -> None:
    """Write what this choice is and what it did (skips included) to the manifest."""
    choices, entry = stage_entry(
        store, "choice", key, backend, plan, variants=(v.key for v in variants), examples=examples
    )
    entry["labeler"] = GOLD_LABELER
    entry["responses"] = int(entry.get("responses", 0)) + report.computed
    entry["skipped"] = {**entry.get("skipped", {}), **report.skipped}
    choices[key] = entry
    store.update_manifest(
        config={"choice": choices},
        components={GOLD_LABELER: {"name": GOLD_LABELER, "params": {}, "version": "1"}},
    )
