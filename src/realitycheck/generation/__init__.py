"""Generation: prompts, sampling plans and the stage that fills a run with model answers.

A :class:`SamplingPlan` says how to answer (a low-temperature best answer plus
stochastic samples, the decoding strategy, the prompt variants, an optional
retriever whose passages are prepended to each question);
:func:`build_prompt` writes each prompt; :func:`generate` calls a backend through
the shared call cache and stores one response per example and variant, resuming
a stopped run. :class:`GenerationPrompt` rebuilds the prompt a response answers,
for a proxy model that reads answers a run did not generate
(:class:`realitycheck.pipeline.ProxyModel`).
A plan's variant may also rewrite the question, e.g. ``paraphrase[backend=...]``
(:data:`REWRITE_TASKS`), as the choose stage's variants do for multiple-choice prompts.
"""

from realitycheck.generation._choice import (
    NORMALISATIONS,
    TEMPLATES,
    McqPrompt,
    OptionScore,
    choose_option,
    render,
    true_mass,
)
from realitycheck.generation._choose import (
    GOLD_LABELER,
    ChoicePlan,
    ChoiceReport,
    check_questions,
    choice_key,
    choose,
)
from realitycheck.generation._errors import generation_errors
from realitycheck.generation._plans import (
    DEFAULT_MAX_TOKENS,
    FORMATS,
    PLANS,
    SAMPLE_DECODINGS,
    PlanRequests,
    SamplingPlan,
    make_plan,
)
from realitycheck.generation._prompts import (
    FEW_SHOT_TASKS,
    PROMPT_TASKS,
    RETRIEVAL_TASKS,
    STYLES,
    Prompt,
    build_prompt,
    choose_demos,
    delimit,
    demo_answer,
    parse_variant,
)
from realitycheck.generation._proxy_prompt import GenerationPrompt
from realitycheck.generation._rewrites import REWRITE_TASKS
from realitycheck.generation._stage import (
    DEFAULT_BATCH_SIZE,
    GenerationReport,
    generate,
    generation_key,
    load_inputs,
)
from realitycheck.generation.variants import PromptVariant, Skipped, variant, variants

__all__ = [
    "ChoicePlan",
    "ChoiceReport",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MAX_TOKENS",
    "FEW_SHOT_TASKS",
    "FORMATS",
    "GOLD_LABELER",
    "GenerationPrompt",
    "GenerationReport",
    "McqPrompt",
    "NORMALISATIONS",
    "OptionScore",
    "PLANS",
    "PROMPT_TASKS",
    "PlanRequests",
    "Prompt",
    "PromptVariant",
    "RETRIEVAL_TASKS",
    "REWRITE_TASKS",
    "SAMPLE_DECODINGS",
    "STYLES",
    "SamplingPlan",
    "Skipped",
    "TEMPLATES",
    "build_prompt",
    "check_questions",
    "choice_key",
    "choose",
    "choose_demos",
    "choose_option",
    "delimit",
    "demo_answer",
    "generate",
    "generation_errors",
    "generation_key",
    "load_inputs",
    "make_plan",
    "parse_variant",
    "render",
    "true_mass",
    "variant",
    "variants",
]
