"""Command-line options built from a settings field, so that a default is written once.

A setting that a run config's table and a verb's option both hold (the
bootstrap's ``n_resamples``, the executor's ``kind``, ``[run] batch_size``) is
declared once, at its dataclass field (:func:`realitycheck.params.param`:
default, constraint, doc); :func:`field_option` makes the option from it: its
default, its type (a choice list, a range) and, unless the verb words it its
own way, its help. The value a verb receives is checked again by the
dataclass it builds, in the one message shape.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import click

from realitycheck.params import Interval, OneOf, OrNone, constraints_of, default_of, param_doc

__all__ = ["field_default", "field_option"]


def _field(cls: type, name: str) -> dataclasses.Field[Any]:
    found = {f.name: f for f in dataclasses.fields(cls)}.get(name)
    if found is None:
        raise click.ClickException(f"{cls.__name__} has no field {name!r}.")  # a bug here
    return found


def field_default(cls: type, name: str) -> Any:
    """Return the default declared at the field ``name`` of the settings dataclass ``cls``."""
    return default_of(_field(cls, name))


def _click_type(field: dataclasses.Field[Any], ranged: bool) -> Any:
    """The option's type from the field's first constraint (``None``: click's default)."""
    for constraint in constraints_of(field):
        inner = constraint.inner if isinstance(constraint, OrNone) else constraint
        if isinstance(inner, OneOf):
            return click.Choice([str(c) for c in inner.choices])
        if isinstance(inner, Interval):
            if not ranged:
                return inner.kind
            closed = inner.closed
            make: Any = click.IntRange if inner.kind is int else click.FloatRange
            return make(
                min=inner.low,
                max=inner.high,
                min_open=closed in ("right", "neither"),
                max_open=closed in ("left", "neither"),
            )
    return None


def field_option(
    cls: type,
    name: str,
    *decls: str,
    help: str | None = None,  # noqa: A002  (click's own name for it)
    ranged: bool = False,
    **attrs: Any,
) -> Any:
    """Return a click option for the field ``name`` of the settings dataclass ``cls``.

    Args:
        cls: The settings dataclass (``Bootstrap``, ``ExecutorSettings``, ``RunSettings``).
        name: The field.
        decls: The option's names (default: ``--name`` with dashes).
        help: The option's help; ``None`` = the field's doc, ``""`` = none.
        ranged: Show an :class:`~realitycheck.params.Interval` as a range type
            (``INTEGER RANGE``, ``x>=1``) instead of its plain number type.
        attrs: Other :func:`click.option` arguments; ``default`` and ``type``
            given here replace the field's (``default=None``: unset means the
            config's value).
    """
    field = _field(cls, name)
    attrs.setdefault("default", default_of(field))
    if "type" not in attrs and not attrs.get("is_flag"):
        kind = _click_type(field, ranged)
        if kind is not None:
            attrs["type"] = kind
    text = param_doc(field) if help is None else help
    names = decls or (f"--{name.replace('_', '-')}",)
    return click.option(*names, help=text or None, **attrs)
