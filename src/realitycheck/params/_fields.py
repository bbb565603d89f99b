"""Fields that carry their constraints, and the one place that checks them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from realitycheck.errors import InvalidInputError
from realitycheck.params._constraints import Constraint, shown

__all__ = [
    "check_arg",
    "check_params",
    "constraint_text",
    "constraints_of",
    "converter_of",
    "default_of",
    "param",
    "param_aliases",
    "param_doc",
    "param_error",
    "renamed_params",
    "required",
    "with_default",
]

_META = "realitycheck.param"


class _Param:
    """What :func:`param` stores in a field's metadata (a plain class: no import cost)."""

    __slots__ = ("aliases", "constraints", "convert", "doc")

    def __init__(
        self,
        constraints: tuple[Constraint, ...],
        convert: Callable[[Any], Any] | None,
        doc: str,
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.constraints, self.convert, self.doc = constraints, convert, doc
        self.aliases = aliases


def param(
    default: Any = dataclasses.MISSING,
    *constraints: Constraint,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    convert: Callable[[Any], Any] | None = None,
    in_key: bool = True,
    doc: str = "",
    aliases: tuple[str, ...] = (),
) -> Any:
    """Declare a dataclass field with its constraints.

    Args:
        default: The default value (leave out, or use :func:`required`, for none).
        constraints: What the value must satisfy, all of them.
        default_factory: Builds the default instead of ``default``.
        convert: Normalises the given value before the check (``as_tuple``,
            ``str``); it returns a value it cannot convert unchanged (or
            raises ``TypeError``/``ValueError``), and the constraints then
            refuse it.
        in_key: Whether the parameter appears in the component's key (settings
            that do not change results, such as concurrency, do not).
        doc: A one-line description (:func:`param_doc`), for documentation.
        aliases: Former names of the parameter. A key or spec that uses one
            still builds, with a ``FutureWarning`` that names the new one
            (:func:`renamed_params`); keys and specs are written with the
            new name only.

    Returns:
        A :func:`dataclasses.field`.
    """
    for c in constraints:
        if not isinstance(c, Constraint):
            raise InvalidInputError(
                f"The constraints of a param must be Constraint objects. Got {c!r} instead."
            )
    metadata = {"in_key": in_key, _META: _Param(tuple(constraints), convert, doc, tuple(aliases))}
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def required(
    *constraints: Constraint,
    convert: Callable[[Any], Any] | None = None,
    in_key: bool = True,
    doc: str = "",
) -> Any:
    """Declare a dataclass field without a default, with its constraints (see :func:`param`)."""
    return param(dataclasses.MISSING, *constraints, convert=convert, in_key=in_key, doc=doc)


def with_default(base: type, name: str, default: Any) -> Any:
    """Redeclare the field ``name`` of dataclass ``base`` in a subclass, with a new default.

    The constraints, converter and ``in_key`` stay those declared on ``base``
    (``config: str = with_default(HubDataset, "config", "squad_v2")``).

    Raises:
        InvalidInputError: If ``base`` has no such field.
    """
    found = {f.name: f for f in dataclasses.fields(base)}.get(name)
    if found is None:
        raise InvalidInputError(f"{base.__name__} has no field {name!r} to give a new default.")
    return dataclasses.field(default=default, metadata=found.metadata)


def param_error(
    name: str,
    owner: str,
    expected: str,
    value: Any = dataclasses.MISSING,
    *,
    got: str = "",
    hint: str = "",
) -> InvalidInputError:
    """Return the error for a bad parameter, in the one message shape.

    ``The '{name}' parameter of {owner} must be {expected}. Got {value!r} instead.``

    Args:
        name: The parameter.
        owner: The component's registered name or the function's name.
        expected: What is accepted, in words that follow "must be".
        value: What was given (shown by its repr, cut at 200 characters).
        got: What was given, in words, instead of ``value`` (``an array of shape (3,)``).
        hint: A sentence added at the end (a close match, the offending item).
    """
    received = got or shown(value)
    tail = f" {hint}" if hint else ""
    return InvalidInputError(
        f"The {name!r} parameter of {owner} must be {expected}. Got {received} instead.{tail}"
    )


def _check(
    value: Any,
    constraints: Iterable[Constraint],
    convert: Callable[[Any], Any] | None,
    name: str,
    owner: str,
) -> Any:
    out = value
    if convert is not None:
        try:
            out = convert(value)
        except (TypeError, ValueError):
            out = value
    for c in constraints:
        if not c.accepts(out):
            raise param_error(name, owner, c.describe(), got=c.shown(value), hint=c.hint(out))
    return out


def check_arg(
    value: Any,
    *constraints: Constraint,
    name: str,
    owner: str,
    convert: Callable[[Any], Any] | None = None,
) -> Any:
    """Check one argument of a plain function; return it (normalised by ``convert``).

    Example: ``check_arg(n_resamples, Interval(int, 1), name="n_resamples",
    owner="bootstrap_ci")``.

    Raises:
        InvalidInputError: In the one message shape, naming the first constraint refused.
    """
    return _check(value, constraints, convert, name, owner)


_DECLARED: dict[type, tuple[tuple[str, _Param], ...]] = {}


def _declared(cls: type) -> tuple[tuple[str, _Param], ...]:
    """Return the (name, declaration) of each declared field of ``cls``, computed once."""
    found = _DECLARED.get(cls)
    if found is None:
        found = _DECLARED[cls] = tuple(
            (f.name, f.metadata[_META])
            for f in dataclasses.fields(cls)
            if f.init and _META in f.metadata
        )
    return found


def _owner_of(obj: Any) -> str:
    name = getattr(obj, "name", "")
    return name if isinstance(name, str) and name else type(obj).__name__


def check_params(obj: Any, owner: str | None = None) -> None:
    """Normalise and check every declared field of a dataclass instance.

    Each field declared with :func:`param` is passed through its ``convert``
    (the normalised value is stored on the instance, frozen or not) and then
    checked against its constraints, in field order.

    Args:
        obj: The dataclass instance (a component, a config object).
        owner: The name used in messages; default: ``obj.name`` when it is a
            non-empty string (a registered component), else the class name.

    Raises:
        InvalidInputError: ``The 'x' parameter of owner must be .... Got ... instead.``
    """
    where = owner or _owner_of(obj)
    for name, declared in _declared(type(obj)):
        value = getattr(obj, name)
        out = _check(value, declared.constraints, declared.convert, name, where)
        if out is not value:
            # The one place that writes to a frozen dataclass: normalising a parameter.
            object.__setattr__(obj, name, out)


def constraints_of(field: dataclasses.Field[Any]) -> tuple[Constraint, ...]:
    """Return the constraints declared on a field (none for a plain field)."""
    declared = field.metadata.get(_META)
    return () if declared is None else declared.constraints


def converter_of(field: dataclasses.Field[Any]) -> Callable[[Any], Any] | None:
    """Return the normaliser declared on a field (:func:`param`'s ``convert``), if any."""
    declared = field.metadata.get(_META)
    return None if declared is None else declared.convert


def default_of(field: dataclasses.Field[Any]) -> Any:
    """Return a field's default (built by its factory if it has one); MISSING if required."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def constraint_text(field: dataclasses.Field[Any]) -> str:
    """Return what a field accepts in words (``a float in [0, 1]``), or ``any value``."""
    constraints = constraints_of(field)
    return "; ".join(c.describe() for c in constraints) if constraints else "any value"


def param_aliases(field: dataclasses.Field[Any]) -> tuple[str, ...]:
    """Return the former names declared on a field (:func:`param`'s ``aliases``)."""
    declared = field.metadata.get(_META)
    return () if declared is None else declared.aliases


_RENAMED: dict[type, dict[str, str]] = {}


def renamed_params(cls: type) -> dict[str, str]:
    """Return ``{former name: name}`` for the declared fields of dataclass ``cls`` (cached)."""
    found = _RENAMED.get(cls)
    if found is None:
        found = _RENAMED[cls] = {
            old: f.name for f in dataclasses.fields(cls) if f.init for old in param_aliases(f)
        }
    return found


def param_doc(field: dataclasses.Field[Any]) -> str:
    """Return the one-line ``doc`` given to :func:`param` for a field (``""`` if none)."""
    declared = field.metadata.get(_META)
    return "" if declared is None else declared.doc
