"""The constraints a parameter can declare, each able to say what it accepts in words."""

from __future__ import annotations

import difflib
import numbers
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_args, get_origin

from realitycheck.errors import InvalidInputError

__all__ = [
    "AnyOf",
    "Constraint",
    "EnvVarName",
    "InstanceOf",
    "Interval",
    "NonEmptyStr",
    "OneOf",
    "OrNone",
    "PathLike",
    "Satisfies",
    "SequenceOf",
    "as_tuple",
    "as_unique_tuple",
    "shown",
]

_SHOWN_CHARS = 200
_SHOWN_ITEMS = 20


def _article(text: str) -> str:
    return f"an {text}" if text[:1].lower() in "aeiou" else f"a {text}"


def shown(value: Any) -> str:
    """Return how a received value is written in a message: its repr, cut at 200 characters.

    Objects other than plain data are named by their type (``a RunStore``),
    and collections of more than 20 items by their size (``a list of 500 items``).
    """
    plain = (str, bytes, int, float, bool, type(None), tuple, list, dict, set, frozenset)
    if not isinstance(value, plain) and not isinstance(value, os.PathLike):
        return _article(type(value).__name__)
    if isinstance(value, tuple | list | dict | set | frozenset) and len(value) > _SHOWN_ITEMS:
        return f"{_article(type(value).__name__)} of {len(value)} items"
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


class Constraint:
    """What a parameter accepts; subclasses implement :meth:`accepts` and :meth:`describe`."""

    def accepts(self, value: Any) -> bool:
        """Return whether ``value`` satisfies the constraint."""
        raise NotImplementedError

    def describe(self) -> str:
        """Return what is accepted, in words that follow "must be" (``a float in [0, 1]``)."""
        raise NotImplementedError

    def shown(self, value: Any) -> str:
        """Return how a rejected ``value`` is written after "Got"."""
        return shown(value)

    def hint(self, value: Any) -> str:
        """Return a sentence added after the message (a close match), or ``""``."""
        return ""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.describe()}>"


def _number_text(x: float) -> str:
    return str(x) if isinstance(x, numbers.Integral) else f"{x:g}"


class Interval(Constraint):
    """A real number (``float``) or an integer (``int``) in a range; never a bool or NaN.

    Args:
        kind: ``int`` (integers only) or ``float`` (any real number, ints included).
        low: The lower end; ``None`` = unbounded.
        high: The upper end; ``None`` = unbounded.
        closed: Which ends belong to the range: ``both`` (the default),
            ``left``, ``right`` or ``neither``.
    """

    def __init__(
        self,
        kind: type,
        low: float | None = None,
        high: float | None = None,
        *,
        closed: Literal["both", "left", "right", "neither"] = "both",
    ) -> None:
        if kind not in (int, float):
            raise InvalidInputError(f"An Interval is of int or float. Got {kind!r} instead.")
        if closed not in ("both", "left", "right", "neither"):
            raise InvalidInputError(
                "An Interval's 'closed' must be 'both', 'left', 'right' or 'neither'. "
                f"Got {closed!r} instead."
            )
        self.kind, self.low, self.high, self.closed = kind, low, high, closed
        self._left_closed = closed in ("both", "left")
        self._right_closed = closed in ("both", "right")
        # Checked with the builtin types first (fast), then the numeric ABCs (numpy scalars).
        self._fast: tuple[type, ...] = (int,) if kind is int else (int, float)
        self._abc = numbers.Integral if kind is int else numbers.Real

    def _is_number(self, value: Any) -> bool:
        kind = type(value)
        if kind in self._fast:
            return True
        return kind is not bool and not isinstance(value, bool) and isinstance(value, self._abc)

    def accepts(self, value: Any) -> bool:
        """Return whether ``value`` is a number of the right kind inside the range."""
        if not self._is_number(value) or value != value:  # NaN is never in a range
            return False
        low, high = self.low, self.high
        if low is not None and not (value >= low if self._left_closed else value > low):
            return False
        return high is None or (value <= high if self._right_closed else value < high)

    def describe(self) -> str:
        """Return e.g. ``an int >= 1``, ``a float > 0`` or ``a float in [0, 1]``."""
        name, low, high = _article(self.kind.__name__), self.low, self.high
        if high is None:
            if low is None:
                return name
            return f"{name} {'>=' if self._left_closed else '>'} {_number_text(low)}"
        if low is None:
            return f"{name} {'<=' if self._right_closed else '<'} {_number_text(high)}"
        left = "[" if self._left_closed else "("
        right = "]" if self._right_closed else ")"
        return f"{name} in {left}{_number_text(low)}, {_number_text(high)}{right}"


def _same(value: Any, choice: Any) -> bool:
    if isinstance(value, bool) != isinstance(choice, bool):
        return False
    try:
        return bool(value == choice)
    except (TypeError, ValueError):  # e.g. an array compared element-wise
        return False


class OneOf(Constraint):
    """One of a fixed list of values; a string close to one gets "Did you mean ...?".

    ``OneOf("a", "b")``, ``OneOf(NAMES)`` (a tuple, list, set or the keys of a
    dict) or ``OneOf(Literal["a", "b"])``: where a field is typed with a
    ``Literal``, pass that type so that the list is written once.
    """

    def __init__(self, *choices: Any) -> None:
        if len(choices) == 1:
            (only,) = choices
            if get_origin(only) is Literal:
                choices = get_args(only)
            elif isinstance(only, Mapping):
                choices = tuple(only)
            elif isinstance(only, set | frozenset):
                choices = tuple(sorted(only))
            elif isinstance(only, tuple | list):
                choices = tuple(only)
        if not choices:
            raise InvalidInputError("A OneOf constraint needs at least one choice. Got none.")
        self.choices: tuple[Any, ...] = tuple(choices)
        try:
            self._strings = frozenset(c for c in self.choices if isinstance(c, str))
        except TypeError:  # pragma: no cover - a str is always hashable
            self._strings = frozenset()

    def accepts(self, value: Any) -> bool:
        """Return whether ``value`` equals one of the choices (a bool never equals 0 or 1)."""
        if type(value) is str and value in self._strings:
            return True
        return any(_same(value, c) for c in self.choices)

    def describe(self) -> str:
        """Return ``one of ('a', 'b')``."""
        return f"one of ({', '.join(repr(c) for c in self.choices)})"

    def hint(self, value: Any) -> str:
        """Return "Did you mean 'x'?" for a string close to a choice."""
        if not isinstance(value, str):
            return ""
        strings = [c for c in self.choices if isinstance(c, str)]
        close = difflib.get_close_matches(value, strings, n=1)
        return f"Did you mean {close[0]!r}?" if close else ""


class InstanceOf(Constraint):
    """An instance of one of ``types`` (for numbers use :class:`Interval`).

    Args:
        types: The accepted types. ``bool`` accepts only ``True`` and ``False``.
        name: How to name them in the message (default: the first type's name).
    """

    def __init__(self, *types: type, name: str = "") -> None:
        if not types:
            raise InvalidInputError("An InstanceOf constraint needs a type. Got none.")
        self.types = types
        self.name = name or _article(types[0].__name__)

    def accepts(self, value: Any) -> bool:
        """Return whether ``value`` is an instance of one of the types."""
        return isinstance(value, self.types)

    def describe(self) -> str:
        """Return e.g. ``a bool``."""
        return self.name


class NonEmptyStr(Constraint):
    """A string with at least one character that is not whitespace.

    Args:
        blank: Accept a string of whitespace only too (a newline as a stop string).
    """

    def __init__(self, *, blank: bool = False) -> None:
        self.blank = blank

    def accepts(self, value: Any) -> bool:
        """Return whether ``value`` is a str with a (non-space) character."""
        return isinstance(value, str) and bool(value if self.blank else value.strip())

    def describe(self) -> str:
        """Return ``a non-empty str`` (``a str of at least one character`` with ``blank``)."""
        return "a str of at least one character" if self.blank else "a non-empty str"


class PathLike(Constraint):
    """A non-empty string or an :class:`os.PathLike` (a :class:`pathlib.Path`)."""

    def accepts(self, value: Any) -> bool:
        """Return whether ``value`` names a path."""
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        return isinstance(value, str) and bool(value.strip())

    def describe(self) -> str:
        """Return ``a non-empty path``."""
        return "a non-empty path"


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class EnvVarName(Constraint):
    """The NAME of an environment variable; a rejected value is never echoed.

    A secret pasted where its variable's name belongs must not reach a log,
    so the message says what the value is not instead of showing it.
    """

    def accepts(self, value: Any) -> bool:
        """Return whether ``value`` is a valid environment variable name."""
        return isinstance(value, str) and bool(_ENV_NAME.match(value))

    def describe(self) -> str:
        """Return what a variable name is made of."""
        return (
            "the NAME of an environment variable (letters, digits, underscores), "
            "not the secret itself"
        )

    def shown(self, value: Any) -> str:
        """Return a description that never contains the value."""
        return "a value that is not a variable name (not shown, as it may be a secret)"


class OrNone(Constraint):
    """``None`` or what ``inner`` accepts."""

    def __init__(self, inner: Constraint) -> None:
        self.inner = inner

    def accepts(self, value: Any) -> bool:
        """Return whether ``value`` is None or accepted by ``inner``."""
        return value is None or self.inner.accepts(value)

    def describe(self) -> str:
        """Return ``<inner> or None``."""
        return f"{self.inner.describe()} or None"

    def shown(self, value: Any) -> str:
        """Show the value as ``inner`` would."""
        return self.inner.shown(value)

    def hint(self, value: Any) -> str:
        """Return ``inner``'s hint."""
        return self.inner.hint(value)


class AnyOf(Constraint):
    """What any of ``constraints`` accepts."""

    def __init__(self, *constraints: Constraint) -> None:
        if not constraints:
            raise InvalidInputError("An AnyOf constraint needs a constraint. Got none.")
        self.constraints = constraints

    def accepts(self, value: Any) -> bool:
        """Return whether one of the constraints accepts ``value``."""
        return any(c.accepts(value) for c in self.constraints)

    def describe(self) -> str:
        """Return the descriptions joined with "or"."""
        return " or ".join(c.describe() for c in self.constraints)

    def hint(self, value: Any) -> str:
        """Return the first hint of a constraint."""
        return next((h for c in self.constraints if (h := c.hint(value))), "")


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


class SequenceOf(Constraint):
    """A sequence (a list, a tuple; never a string) whose items each satisfy ``item``.

    Args:
        item: What each item must be; ``None`` = anything.
        length: The exact length (2 reads "a pair").
        min_length: The least length (1 reads "a non-empty list").
        unique: Whether repeated items are refused.
    """

    def __init__(
        self,
        item: Constraint | None = None,
        *,
        length: int | None = None,
        min_length: int = 0,
        unique: bool = False,
    ) -> None:
        self.item, self.length, self.min_length, self.unique = item, length, min_length, unique

    def _bad_item(self, value: Any) -> int | None:
        if self.item is None:
            return None
        return next((i for i, x in enumerate(value) if not self.item.accepts(x)), None)

    def accepts(self, value: Any) -> bool:
        """Return whether ``value`` is a sequence of the right length and items."""
        if not _is_sequence(value):
            return False
        if self.length is not None and len(value) != self.length:
            return False
        if len(value) < self.min_length:
            return False
        if self.unique and any(_same(x, y) for i, x in enumerate(value) for y in value[:i]):
            return False
        return self._bad_item(value) is None

    def describe(self) -> str:
        """Return e.g. ``a non-empty list without repeats, each item an int >= 0``."""
        if self.length == 2:
            text = "a pair"
        elif self.length is not None:
            text = f"a list of {self.length} items"
        elif self.min_length == 1:
            text = "a non-empty list"
        elif self.min_length > 1:
            text = f"a list of at least {self.min_length} items"
        else:
            text = "a list"
        if self.unique:
            text += " without repeats"
        if self.item is not None:
            text += f", each item {self.item.describe()}"
        return text

    def hint(self, value: Any) -> str:
        """Name the first item that is not accepted."""
        if not _is_sequence(value) or self.item is None:
            return ""
        i = self._bad_item(value)
        if i is None:
            return ""
        more = self.item.hint(value[i])
        return f"Item {i} is {self.item.shown(value[i])}." + (f" {more}" if more else "")


class Satisfies(Constraint):
    """Whatever ``predicate`` returns True for (a predicate that raises means no).

    Args:
        predicate: The test.
        text: What it accepts, in words that follow "must be".
    """

    def __init__(self, predicate: Callable[[Any], bool], text: str) -> None:
        self.predicate, self.text = predicate, text

    def accepts(self, value: Any) -> bool:
        """Return ``predicate(value)``, False if it raises."""
        try:
            return bool(self.predicate(value))
        except (TypeError, ValueError, AttributeError):
            return False

    def describe(self) -> str:
        """Return the text given."""
        return self.text


def as_tuple(value: Any) -> Any:
    """Normalise a list to a tuple and a lone scalar (str, number, bool) to a 1-tuple.

    Anything else is returned unchanged, for the constraint to refuse.
    """
    if isinstance(value, str | int | float | bool):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(value)
    return value


def as_unique_tuple(value: Any) -> Any:
    """Like :func:`as_tuple`, keeping the first of repeated items."""
    value = as_tuple(value)
    if not isinstance(value, tuple):
        return value
    try:
        return tuple(dict.fromkeys(value))
    except TypeError:  # unhashable items: the constraint refuses them
        return value
