"""Label cells of one file read as hallucination verdicts, by a :class:`LabelRules`.

A :class:`LabelReader` applies the rules of
:mod:`realitycheck.datasets.files._label_rules` to the cells of one file, counts every
mapping per source value and writes those counts, and a polarity warning, as
plain-language notes.
"""

from __future__ import annotations

import ast
import json
import logging
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from realitycheck.datasets import TOO_DEEP, cell_text
from realitycheck.datasets.files._label_rules import LabelRules, share_of
from realitycheck.errors import InvalidInputError

__all__ = ["LabelReader"]

logger = logging.getLogger(__name__)

_SHOWN = 12
"""Source values listed per column in the notes; the rest are counted together."""


def _outcome(verdict: bool | None) -> str:
    return "excluded" if verdict is None else "hallucinated" if verdict else "faithful"


_BOOLEAN_PAIRS = (("true", "false"), ("yes", "no"), ("1", "0"))
"""Label values whose polarity the default mapping can only guess (hallucinated first)."""


def _float(raw: Any) -> float:
    try:
        return float(str(raw).strip()) if isinstance(raw, str) else float(raw)
    except (TypeError, ValueError):
        return math.nan


class LabelReader:
    """Applies :class:`LabelRules` to the label cells of one file, counting each mapping.

    Args:
        rules: The rules.
        path: The file, named in every error.
    """

    def __init__(self, rules: LabelRules, path: Path) -> None:
        self.rules = rules
        self.path = path
        self.tally: dict[str, Counter[tuple[str, str]]] = {}
        self.values: dict[str, set[str]] = {}

    def count(self, column: str, source: str, verdict: bool | None) -> None:
        """Count one cell of ``column`` whose ``source`` value mapped to ``verdict``."""
        self.tally.setdefault(column, Counter())[(source, _outcome(verdict))] += 1

    def _error(self, message: str, line: int, column: str) -> InvalidInputError:
        return InvalidInputError(message, path=self.path, line=line, field=column)

    def scalar(self, raw: Any, column: str, line: int, *, count: str = "") -> bool:
        """Return the verdict of one non-empty value; ``count`` prefixes its tally entry."""
        rules = self.rules
        if isinstance(raw, dict | list | tuple):
            raise self._error(
                f"The label must be one value here. Got a {type(raw).__name__} ({raw!r:.80}).",
                line,
                column,
            )
        if rules.threshold is not None:
            number = math.nan if isinstance(raw, bool) else _float(raw)
            if not math.isfinite(number):
                raise self._error(
                    f"The label must be a finite number to compare with threshold="
                    f"{rules.threshold:g}. Got {raw!r} instead.",
                    line,
                    column,
                )
            if rules.hallucinated_if == "above":
                verdict = number > rules.threshold
                source = f"> {rules.threshold:g}" if verdict else f"<= {rules.threshold:g}"
            else:
                verdict = number < rules.threshold
                source = f"< {rules.threshold:g}" if verdict else f">= {rules.threshold:g}"
            self.count(column, f"{count}{source}", verdict)
            return verdict
        value = cell_text(raw)
        if value not in rules.positive and value not in rules.negative:
            raise self._error(
                f"The label {raw!r} is neither positive {rules.positive} nor negative "
                f"{rules.negative}; set the 'positive' and 'negative' parameters, or "
                "'threshold' and 'hallucinated_if' for a numeric score.",
                line,
                column,
            )
        verdict = value in rules.positive
        self.values.setdefault(column, set()).add(value)
        self.count(column, f"{count}{value!r}", verdict)
        return verdict

    def items(self, raw: Any, column: str, line: int) -> list[Any] | None:
        """Return a list cell's items (JSON or Python-literal text, never evaluated), or None.

        None means the cell is not a list. Text that starts with ``[`` or ends
        with ``]`` must parse as a list. A table cell, such as DelucionQA's
        ``{'R1': 'Supported', 'R2': 'Neither'}``, is the list of its values in
        their order.
        """
        if isinstance(raw, list | tuple):
            return list(raw)
        if isinstance(raw, dict):
            return list(raw.values())
        if not isinstance(raw, str):
            return None
        text = raw.strip()
        if text.startswith("{") or text.endswith("}"):
            return list(self._literal(text, line, column, dict, "table").values())
        if not (text.startswith("[") or text.endswith("]")):
            return None
        return list(self._literal(text, line, column, list | tuple, "list"))

    def _literal(self, text: str, line: int, column: str, kind: Any, name: str) -> Any:
        """Return a cell's JSON or Python-literal value (read as data, never run) of ``kind``."""
        try:
            parsed = json.loads(text)
        except RecursionError:
            raise self._error(TOO_DEEP, line, column) from None
        except ValueError:
            try:
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise self._error(
                    f"The {name} cell cannot be read as JSON or as a Python literal: {text!r:.80}.",
                    line,
                    column,
                ) from None
        if not isinstance(parsed, kind):
            raise self._error(
                f"The cell looks like a {name} but reads as {type(parsed).__name__}: {text!r:.80}.",
                line,
                column,
            )
        return parsed

    def _item_verdicts(self, items: list[Any], column: str, line: int, key: str) -> list[bool]:
        out = []
        for i, item in enumerate(items, start=1):
            if key:
                if not isinstance(item, dict) or key not in item:
                    raise self._error(
                        f"Item {i} of the list must be an object with the key {key!r}. "
                        f"Got {item!r:.80} instead.",
                        line,
                        column,
                    )
                item = item[key]
            if cell_text(item) is None and not isinstance(item, list | dict):
                raise self._error(f"Item {i} of the list is empty.", line, column)
            if isinstance(item, list | tuple | dict):
                raise self._error(
                    f"Item {i} of the list must be one value. Got a {type(item).__name__}.",
                    line,
                    column,
                )
            out.append(self.scalar(item, column, line, count="item "))
        return out

    def cell(
        self,
        raw: Any,
        column: str,
        line: int,
        *,
        sentences: bool = False,
        key: str = "",
        tag: str = "",
    ) -> bool | None:
        """Return the verdict of one label cell (None = no verdict).

        ``sentences`` reads the cell as per-sentence labels (``sentence_rule``);
        otherwise a list cell follows ``list_rule``. ``key`` reads each item of
        a list of objects at that key (``claims.label`` for
        ``[{"claim": ..., "label": true}, ...]``). With a ``tag``, the cell
        (a value or a list) is hallucinated when it lists the tag, faithful
        when it lists other values, and an empty cell follows ``empty_means``.
        """
        rules = self.rules
        items = self.items(raw, column, line)
        if tag:
            return self._tagged(raw, items, column, tag)
        if items is None:
            if cell_text(raw) is None:
                self.count(column, "empty", rules.empty)
                return rules.empty
            if sentences:
                raise self._error(
                    f"The cell must be a list of per-sentence labels. Got {raw!r:.80} instead.",
                    line,
                    column,
                )
            if rules.list_rule == "nonempty":
                self.count(column, "non-empty value", True)
                return True
            return self.scalar(raw, column, line)
        if not items:
            self.count(column, "empty list", rules.empty)
            return rules.empty
        if not sentences and rules.list_rule == "nonempty":
            self.count(column, "non-empty list", True)
            return True
        verdicts = self._item_verdicts(items, column, line, key)
        if sentences:
            return self._sentence_verdict(verdicts)
        return any(verdicts) if rules.list_rule == "any" else all(verdicts)

    def _tagged(self, raw: Any, items: list[Any] | None, column: str, tag: str) -> bool | None:
        listed = [cell_text(i) for i in (items if items is not None else [raw])]
        listed = [v for v in listed if v]
        if not listed:
            self.count(column, "empty", self.rules.empty)
            return self.rules.empty
        verdict = tag.lower() in listed
        self.count(column, f"{'lists' if verdict else 'does not list'} {tag!r}", verdict)
        return verdict

    def _sentence_verdict(self, verdicts: list[bool]) -> bool:
        rule = self.rules.sentence_rule
        if rule == "strictest":
            return any(verdicts)
        share = sum(verdicts) / len(verdicts)
        if rule == "majority":
            return share >= 0.5
        return share >= (share_of(rule) or 1.0)

    def combine(self, verdicts: Sequence[bool | None]) -> bool | None:
        """Combine the verdicts of several label columns by ``combine``.

        ``any_of``: hallucinated when any column is, faithful when all are,
        else no verdict. ``all_of``: hallucinated when all are, faithful when
        any is faithful, else no verdict.
        """
        if self.rules.combine == "any_of":
            if any(v is True for v in verdicts):
                return True
            return None if any(v is None for v in verdicts) else False
        if any(v is False for v in verdicts):
            return False
        return None if any(v is None for v in verdicts) else True

    def vote(self, verdicts: Sequence[bool | None]) -> bool | None:
        """Aggregate annotator verdicts by ``majority`` (a tie is hallucinated) or ``worst``.

        Annotators without a verdict are left out; with none left, no verdict.
        """
        given = [v for v in verdicts if v is not None]
        if not given:
            return None
        if self.rules.aggregate == "worst":
            return any(given)
        return 2 * sum(given) >= len(given)

    def mapping_notes(self, title: str = "Label mapping of {column!r}") -> list[str]:
        """Return one note per column counting each mapping, ``'yes' -> hallucinated 88``.

        ``title`` names the column (``{column}`` is filled in); the twelve
        commonest source values are listed, the rest counted together.
        """
        out = []
        for column, counts in self.tally.items():
            parts = [f"{src} -> {what} {n}" for (src, what), n in counts.most_common(_SHOWN)]
            rest = sum(n for _, n in counts.most_common()[_SHOWN:])
            more = f", and {rest} more cells of {len(counts) - _SHOWN} other values" if rest else ""
            out.append(f"{title.format(column=column)}: {', '.join(parts)}{more}.")
        return out

    def notes(self, verdicts: Sequence[bool | None], source: str = "") -> list[str]:
        """Return the mapping counts per column and, if due, the polarity warning.

        ``verdicts`` are the final ``human`` verdicts; when more than half of
        those given are hallucinated and the polarity is not confirmed, a
        warning is logged and added. ``source`` names the files in the warning
        (default: the file being read).
        """
        out = self.mapping_notes()
        given = [v for v in verdicts if v is not None]
        if not given:
            return out
        rate = sum(given) / len(given)
        out.append(
            f"Human labels: {sum(given)} hallucinated, {len(given) - sum(given)} faithful, "
            f"{len(verdicts) - len(given)} without a verdict ({rate:.0%} hallucinated)."
        )
        if self.rules.confirmed:
            return out
        where = source or self.path.name
        guessed = self.boolean_guesses(where, rate)
        for warning in guessed:
            logger.warning(warning)
            out.append(warning)
        if rate > 0.5 and not guessed:
            warning = (
                f"Warning: {rate:.0%} of the labelled responses of {where} "
                "map to hallucinated. If a positive label means correct in this file, swap "
                "'positive' and 'negative' (or the 'hallucinated_if' direction); if the "
                "mapping is right, set polarity=confirmed."
            )
            logger.warning(warning)
            out.append(warning)
        return out

    def boolean_guesses(self, where: str, rate: float, kind: str = "label") -> list[str]:
        """Return a warning per boolean-looking ``kind`` column read by the default value lists.

        ``true``/``false``, ``yes``/``no`` and ``1``/``0`` say nothing about
        which side is the hallucination (``label: true`` often means factual),
        so the default guess is named whatever the share of hallucinated.
        """
        if not self.rules.default_values or self.rules.threshold is not None:
            return []
        out = []
        for column, seen in self.values.items():
            pair = next((p for p in _BOOLEAN_PAIRS if seen <= set(p)), None)
            if pair is None:
                continue
            yes, no = pair
            out.append(
                f"Warning: the {kind} column {column!r} of {where} holds {yes}/{no} values and "
                f"was read by the default mapping: {yes!r} -> hallucinated, {no!r} -> faithful "
                f"({rate:.0%} of the labelled responses hallucinated). If {yes!r} means correct "
                f"here, set positive={no},negative={yes}; if the mapping is right, set "
                f"positive={yes},negative={no} (or polarity=confirmed)."
            )
        return out
