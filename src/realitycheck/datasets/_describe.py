"""A plain summary of what a dataset yields, for ``realitycheck datasets describe``."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from realitycheck.datasets._bundle import Bundle

__all__ = ["describe"]


def describe(bundle: Bundle, *, labeler: str = "human") -> dict[str, Any]:
    """Count what a loaded dataset holds.

    Args:
        bundle: What :meth:`Dataset.load` returned.
        labeler: The label key whose verdicts are broken down by task and model.

    Returns:
        A JSON-able dict: ``examples``, ``responses``, ``labels`` (per labeler key:
        ``labelled``, ``hallucinated``, ``excluded`` = verdict None, ``categories``),
        ``scores`` (per detector key: ``n``, ``missing``), ``tasks`` and ``models``
        (``examples`` / ``responses``, ``labelled`` and ``hallucinated`` under
        ``labeler``) and ``notes``.
    """
    labels: dict[str, Counter[str]] = defaultdict(Counter)
    categories: dict[str, Counter[str]] = defaultdict(Counter)
    verdict: dict[str, bool | None] = {}
    for label in bundle.labels:
        counts = labels[label.labeler]
        if label.hallucinated is None:
            counts["excluded"] += 1
        else:
            counts["labelled"] += 1
            counts["hallucinated"] += int(label.hallucinated)
        if label.category:
            categories[label.labeler][label.category] += 1
        if label.labeler == labeler:
            verdict[label.response_id] = label.hallucinated

    scores: dict[str, Counter[str]] = defaultdict(Counter)
    for score in bundle.scores:
        scores[score.detector]["n"] += 1
        scores[score.detector]["missing"] += int(score.value is None)

    task_of = {e.example_id: e.task for e in bundle.examples}
    tasks: dict[str, Counter[str]] = defaultdict(Counter)
    for example in bundle.examples:
        tasks[example.task]["examples"] += 1
    models: dict[str, Counter[str]] = defaultdict(Counter)
    for response in bundle.responses:
        task = task_of.get(response.example_id, "unknown")
        value = verdict.get(response.response_id)
        for counts in (tasks[task], models[response.model]):
            counts["responses"] += 1
            if value is not None:
                counts["labelled"] += 1
                counts["hallucinated"] += int(value)

    label_keys = ("labelled", "hallucinated", "excluded")
    return {
        "examples": len(bundle.examples),
        "responses": len(bundle.responses),
        "labels": {
            key: {**{k: labels[key][k] for k in label_keys}, "categories": dict(categories[key])}
            for key in sorted(labels)
        },
        "scores": {key: dict(scores[key]) for key in sorted(scores)},
        "tasks": {key: _counts(tasks[key], ("examples",)) for key in sorted(tasks)},
        "models": {key: _counts(models[key], ()) for key in sorted(models)},
        "labeler": labeler,
        "notes": list(bundle.notes),
    }


def _counts(counts: Counter[str], first: tuple[str, ...]) -> dict[str, int]:
    return {k: counts[k] for k in (*first, "responses", "labelled", "hallucinated")}
