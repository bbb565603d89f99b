"""Generation: what to ask a model, in prompts, sampling plans and prompt variants.

A :class:`SamplingPlan` says how to answer (a low-temperature best answer plus
stochastic samples, the decoding strategy, the prompt variants, an optional
retriever whose passages are prepended to each question); :func:`build_prompt`
writes each prompt. :class:`GenerationPrompt` rebuilds the prompt a response
answers, for a proxy model that reads answers a run did not generate
(:class:`realitycheck.pipeline.ProxyModel`). A plan's variant may also rewrite
the question, e.g. ``paraphrase[backend=...]`` (:data:`REWRITE_TASKS`,
:func:`rewriter`). For multiple-choice questions, a :class:`ChoicePlan` names
the normalisation and the template of the :class:`McqPrompt` whose options are
scored, and the registered prompt variants (:data:`variants`) vary it.

The stages that ask, :func:`realitycheck.pipeline.generate` and
:func:`realitycheck.pipeline.choose`, sit a floor above, in
:mod:`realitycheck.pipeline`. Every name here loads on first use, so that the
command line builds its options from :class:`ChoicePlan`'s fields without
loading numpy (which the prompt variants use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from realitycheck.registry import lazy_names

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from realitycheck.generation._choice import (
        NORMALISATIONS,
        TEMPLATES,
        ChoicePlan,
        McqPrompt,
        OptionScore,
        base_prompt,
        choose_option,
        render,
        true_mass,
    )
    from realitycheck.generation._plans import (
        DEFAULT_MAX_TOKENS,
        FORMATS,
        PLANS,
        SAMPLE_DECODINGS,
        PlanRequests,
        SamplingPlan,
        make_plan,
        usable_capabilities,
    )
    from realitycheck.generation._prompts import (
        FAITHFUL_REPLIES,
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
    from realitycheck.generation._rewrites import (
        BASE_STYLE,
        REWRITE_TASKS,
        Rewrites,
        check_rewritable,
        rewrite_examples,
        rewriter,
        variant_part,
    )
    from realitycheck.generation._variants import PromptVariant, Skipped, variant, variants

_LAZY = {
    **dict.fromkeys(
        (
            "NORMALISATIONS",
            "TEMPLATES",
            "ChoicePlan",
            "McqPrompt",
            "OptionScore",
            "base_prompt",
            "choose_option",
            "render",
            "true_mass",
        ),
        "_choice",
    ),
    **dict.fromkeys(
        (
            "DEFAULT_MAX_TOKENS",
            "FORMATS",
            "PLANS",
            "SAMPLE_DECODINGS",
            "PlanRequests",
            "SamplingPlan",
            "make_plan",
            "usable_capabilities",
        ),
        "_plans",
    ),
    **dict.fromkeys(
        (
            "FAITHFUL_REPLIES",
            "FEW_SHOT_TASKS",
            "PROMPT_TASKS",
            "RETRIEVAL_TASKS",
            "STYLES",
            "Prompt",
            "build_prompt",
            "choose_demos",
            "delimit",
            "demo_answer",
            "parse_variant",
        ),
        "_prompts",
    ),
    "GenerationPrompt": "_proxy_prompt",
    **dict.fromkeys(
        (
            "BASE_STYLE",
            "REWRITE_TASKS",
            "Rewrites",
            "check_rewritable",
            "rewrite_examples",
            "rewriter",
            "variant_part",
        ),
        "_rewrites",
    ),
    **dict.fromkeys(("PromptVariant", "Skipped", "variant", "variants"), "_variants"),
}
"""Each name loaded on first use, from its module (the command line's ``--help`` stays cheap)."""

__all__ = [
    "BASE_STYLE",
    "ChoicePlan",
    "DEFAULT_MAX_TOKENS",
    "FAITHFUL_REPLIES",
    "FEW_SHOT_TASKS",
    "FORMATS",
    "GenerationPrompt",
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
    "Rewrites",
    "SAMPLE_DECODINGS",
    "STYLES",
    "SamplingPlan",
    "Skipped",
    "TEMPLATES",
    "base_prompt",
    "build_prompt",
    "check_rewritable",
    "choose_demos",
    "choose_option",
    "delimit",
    "demo_answer",
    "make_plan",
    "parse_variant",
    "render",
    "rewrite_examples",
    "rewriter",
    "true_mass",
    "usable_capabilities",
    "variant",
    "variant_part",
    "variants",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
