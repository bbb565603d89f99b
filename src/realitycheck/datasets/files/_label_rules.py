"""Label rules of the ``files`` dataset: how label cells become hallucination verdicts.

A :class:`LabelRules` holds the rules (value lists, a numeric threshold with
its direction, what an empty cell means, how a list cell, several label
columns, per-sentence labels and per-annotator verdicts are combined). A
:class:`LabelReader` applies them to the cells of one file, counts every
mapping per source value and writes those counts, and a polarity warning,
as plain-language notes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from realitycheck.params import as_tuple, param_error

if TYPE_CHECKING:
    from realitycheck.datasets.files import Files

__all__ = [
    "AGGREGATES",
    "COMBINES",
    "DEFAULT_NEGATIVE",
    "DEFAULT_POSITIVE",
    "DIRECTIONS",
    "EMPTY_MEANS",
    "LIST_RULES",
    "POLARITIES",
    "LabelRules",
    "check_label_params",
    "column_names",
    "rules_note",
    "rules_of",
    "share_of",
]

logger = logging.getLogger(__name__)

DIRECTIONS = ("above", "below")
EMPTY_MEANS = ("excluded", "hallucinated", "faithful")
LIST_RULES = ("any", "all", "nonempty")
COMBINES = ("any_of", "all_of")
AGGREGATES = ("majority", "worst", "dawid_skene")
POLARITIES = ("unconfirmed", "confirmed")
DEFAULT_POSITIVE = ("1", "true", "yes", "hallucinated")
"""Label values read as hallucinated unless ``positive`` says otherwise."""
DEFAULT_NEGATIVE = ("0", "false", "no", "faithful")
"""Label values read as faithful unless ``negative`` says otherwise."""


def share_of(rule: str) -> float | None:
    """Return X of a ``share>=X`` sentence rule, or None when ``rule`` is not of that form.

    X must be a number in (0, 1].
    """
    if not rule.startswith("share>="):
        return None
    try:
        value = float(rule[len("share>=") :])
    except ValueError:
        return None
    return value if 0.0 < value <= 1.0 else None


@dataclass(frozen=True)
class LabelRules:
    """How label cells become verdicts (checked by :class:`~realitycheck.datasets.files.Files`).

    Attributes:
        positive: Cell values that mean hallucinated (compared as :func:`cell_text`).
        negative: Cell values that mean faithful.
        threshold: A numeric cell beyond it is hallucinated; None = use the value lists.
        hallucinated_if: ``above`` or ``below`` the threshold; a tie is faithful.
        empty_means: ``excluded`` (no verdict), ``hallucinated`` or ``faithful``.
        list_rule: ``any``, ``all`` or ``nonempty`` for a list cell of a label column.
        sentence_rule: ``strictest``, ``majority`` or ``share>=X`` for a cell of
            per-sentence labels.
        combine: ``any_of`` or ``all_of`` over several label (and sentence) columns.
        aggregate: ``majority``, ``worst`` or ``dawid_skene`` over annotator columns
            (Dawid–Skene needs every row; :class:`RowReader` fits it at the end).
        confirmed: The user confirmed the polarity (no polarity warning).
        default_values: ``positive`` and ``negative`` are the defaults (the user
            chose no mapping), so a boolean-looking column's polarity is a guess.
    """

    positive: tuple[str, ...]
    negative: tuple[str, ...]
    threshold: float | None = None
    hallucinated_if: str = ""
    empty_means: str = "excluded"
    list_rule: str = "any"
    sentence_rule: str = "strictest"
    combine: str = "any_of"
    aggregate: str = "majority"
    confirmed: bool = False
    default_values: bool = False

    @property
    def empty(self) -> bool | None:
        """The verdict of an empty cell or list."""
        return {"excluded": None, "hallucinated": True, "faithful": False}[self.empty_means]


def column_names(value: Any) -> Any:
    """Normalise column names, leaving out empty ones (``label=""`` names no column)."""
    items = as_tuple(value)
    if isinstance(items, tuple):
        items = tuple(str(v) for v in items)
    return tuple(v for v in items if v) if isinstance(items, tuple) else items


def check_label_params(files: Files) -> None:
    """Refuse label parameters that contradict each other."""
    if (files.threshold is None) != (not files.hallucinated_if):
        given, missing = ("threshold", "hallucinated_if")
        if files.threshold is None:
            given, missing = missing, given
        value = getattr(files, missing)
        raise param_error(
            missing,
            files.name,
            f"set together with {given!r}",
            value,
            hint="A numeric label needs both: threshold=0.5,hallucinated_if=below (or above).",
        )
    seen: dict[str, str] = {}
    judged = tuple(entry.partition(":")[2] for entry in files.judges)
    for kind in ("label", "sentences", "annotators", "judges"):
        for column in judged if kind == "judges" else getattr(files, kind):
            if column in seen:
                raise param_error(
                    kind,
                    files.name,
                    "columns not named by another label parameter",
                    getattr(files, kind),
                    hint=f"{column!r} is also in {seen[column]!r}.",
                )
            seen[column] = kind


def rules_of(files: Files) -> LabelRules:
    """Return the label rules that the parameters of ``files`` declare."""
    return LabelRules(
        positive=files.positive,
        negative=files.negative,
        threshold=files.threshold,
        hallucinated_if=files.hallucinated_if,
        empty_means=files.empty_means,
        list_rule=files.list_rule,
        sentence_rule=files.sentence_rule,
        combine=files.combine,
        aggregate=files.aggregate,
        confirmed=files.polarity == "confirmed",
        default_values=(files.positive, files.negative) == (DEFAULT_POSITIVE, DEFAULT_NEGATIVE),
    )


def rules_note(files: Files) -> str:
    """Return the label rules in one sentence."""
    if files.threshold is not None:
        side = ">" if files.hallucinated_if == "above" else "<"
        values = f"a value {side} {files.threshold:g} -> hallucinated, else not"
    else:
        values = (
            f"{'/'.join(files.positive)} -> hallucinated, {'/'.join(files.negative)} -> not "
            "(case-insensitive)"
        )
    parts = [f"Labels: {values}; an empty cell or list -> {files.empty_means}"]
    parts.append(f"a list cell -> list_rule={files.list_rule}")
    if files.sentences:
        parts.append(f"per-sentence labels -> sentence_rule={files.sentence_rule}")
    if len(files.label) + len(files.sentences) > 1:
        parts.append(f"columns combined by {files.combine}")
    if files.annotators:
        parts.append(
            f"annotators {list(files.annotators)} -> human:<column>"
            + ("" if files.label or files.sentences else f", human = {files.aggregate}")
        )
    return "; ".join(parts) + "."
