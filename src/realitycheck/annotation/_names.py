"""The name lists of annotation, in one light module (the command line reads them at start-up)."""

from __future__ import annotations

__all__ = ["AGGREGATES", "FORMATS", "STRATA", "STRATEGIES", "VERDICT_CHOICES"]

STRATEGIES = ("disagreement", "stratified", "random")
"""How ``annotate export`` chooses responses (``escalate`` is a round of its own)."""
STRATA = ("dataset", "model", "length", "label:<labeler>")
"""What ``stratified`` may stratify by."""
FORMATS = ("label-studio", "csv", "jsonl")
"""The file formats ``annotate export`` writes."""
AGGREGATES = ("majority", "worst", "dawid_skene")
"""The aggregate rules, the same as the ``files`` dataset's ``aggregate`` parameter."""
VERDICT_CHOICES = ("Hallucinated", "Faithful", "Can't tell")
"""The choices an annotator has, in the order they are shown."""
