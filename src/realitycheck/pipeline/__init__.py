"""The stages that fill and measure a run: ingest, generate, choose, label, detect, evaluate.

:func:`generate` asks a backend for free-form answers under a
:class:`~realitycheck.generation.SamplingPlan` and :func:`choose` answers
multiple-choice questions by likelihood under a
:class:`~realitycheck.generation.ChoicePlan`; both store one response per
example and prompt variant through the shared call cache, resuming a stopped
run. :func:`ingest` stores a dataset's own responses instead. :func:`label`
and :func:`detect` add labels and scores, and :func:`evaluate` measures them.
What to ask (prompts, plans, prompt variants) is the floor below,
:mod:`realitycheck.generation`.

Every name loads on first use, so that a stage loads only its own modules (the
label and detect stages neither pandas nor the evaluation code), and the
command line builds ``evaluate``'s options from :class:`EvaluationConfig`'s
fields without loading numpy or pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from realitycheck.registry import lazy_names

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from realitycheck.pipeline._checks import check_keys
    from realitycheck.pipeline._choose import (
        GOLD_LABELER,
        ChoiceReport,
        check_questions,
        choice_key,
        choose,
    )
    from realitycheck.pipeline._evaluate import Evaluation, evaluate
    from realitycheck.pipeline._evaluate_config import EvaluationConfig
    from realitycheck.pipeline._generate import (
        GenerationReport,
        generate,
        generation_key,
        load_inputs,
    )
    from realitycheck.pipeline._generation_errors import generation_errors
    from realitycheck.pipeline._ingest import ingest
    from realitycheck.pipeline._proxy_model import PromptBuilder, ProxyModel
    from realitycheck.pipeline._report import StageReport, commonest_error
    from realitycheck.pipeline._slices import BUILT_IN_SLICES, check_slice_by
    from realitycheck.pipeline._stages import detect, label

_LAZY = {
    "check_keys": "_checks",
    **dict.fromkeys(
        ("GOLD_LABELER", "ChoiceReport", "check_questions", "choice_key", "choose"), "_choose"
    ),
    **dict.fromkeys(("Evaluation", "evaluate"), "_evaluate"),
    "EvaluationConfig": "_evaluate_config",
    **dict.fromkeys(("GenerationReport", "generate", "generation_key", "load_inputs"), "_generate"),
    "generation_errors": "_generation_errors",
    "ingest": "_ingest",
    **dict.fromkeys(("PromptBuilder", "ProxyModel"), "_proxy_model"),
    **dict.fromkeys(("StageReport", "commonest_error"), "_report"),
    **dict.fromkeys(("BUILT_IN_SLICES", "check_slice_by"), "_slices"),
    **dict.fromkeys(("detect", "label"), "_stages"),
}
"""Each name loaded on first use, from its module (the command line's ``--help`` stays cheap)."""

__all__ = [
    "BUILT_IN_SLICES",
    "ChoiceReport",
    "Evaluation",
    "EvaluationConfig",
    "GOLD_LABELER",
    "GenerationReport",
    "PromptBuilder",
    "ProxyModel",
    "StageReport",
    "check_keys",
    "check_questions",
    "check_slice_by",
    "choice_key",
    "choose",
    "commonest_error",
    "detect",
    "evaluate",
    "generate",
    "generation_errors",
    "generation_key",
    "ingest",
    "label",
    "load_inputs",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
