"""Fields that hold another component: a judge's backend, a panel's judges.

:func:`nested` declares such a field. The value given (a built component, a
key or a ``{name, params}`` mapping) is built once, by the family's
:meth:`~realitycheck.registry.Registry.build`, when the holding component is
constructed (through :func:`realitycheck.params.check_params`), and checked to
be a component of that family.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from realitycheck.errors import RealityCheckError
from realitycheck.params import Constraint, OrNone, param
from realitycheck.registry._component import Component
from realitycheck.registry._component_docs import singular
from realitycheck.registry._registry import Registry, registry_of

__all__ = ["nested"]


class _ComponentOf(Constraint):
    """A built component of one family (what :func:`nested` fields hold after building)."""

    def __init__(self, family: str | Registry[Any], many: bool) -> None:
        self.family, self.many = family, many

    def _name(self) -> str:
        return singular(self.family if isinstance(self.family, str) else self.family.family)

    def accepts(self, value: Any) -> bool:
        """Return whether ``value`` is a component (or tuple of them) of the family."""
        registry = registry_of(self.family)
        if self.many and not isinstance(value, tuple):
            return False
        items = value if self.many else (value,)
        return all(
            isinstance(v, Component) and v.family == registry.family and v.name in registry
            for v in items
        )

    def hint(self, value: Any) -> str:
        """Return why ``value`` could not be built (an unknown name, a bad parameter…)."""
        try:
            _build(self.family, self.many, value)
        except RealityCheckError as exc:
            return str(exc)
        return ""

    def describe(self) -> str:
        """Return what is accepted, in words."""
        one = (
            f"a {self._name()} (a key such as name[key=value], a {{name, params}} table, "
            "or one built)"
        )
        return f"a list of {self._name()}s, each {one[2:]}" if self.many else one


def nested(
    family: str | Registry[Any],
    *,
    default: Any = None,
    many: bool = False,
    doc: str = "",
    aliases: tuple[str, ...] = (),
) -> Any:
    """Declare a field that holds a component of another family (a judge's backend).

    The field takes a built component, a key (``openai[model=gpt-4o-mini]``)
    or a spec mapping (``{"name": "openai", "params": {"model": "gpt-4o-mini"}}``,
    what a TOML table gives); it is built once, when the holding component is,
    by :meth:`Registry.build`. Its spec nests in the holder's spec and its key
    in the holder's key.

    Args:
        family: The family name (``"backends"``) or the registry itself.
        default: The default; ``None`` (the only default that is not a component)
            means "none given".
        many: Whether the field holds a tuple of components (``a+b`` in a key).
        doc: A one-line description, for :meth:`Registry.describe`.
        aliases: Former names of the field (``("backend",)``): a key or spec
            that uses one still builds, with a warning that names the new
            name (see :func:`realitycheck.params.param`).

    Returns:
        A :func:`dataclasses.field`.
    """

    def build(value: Any) -> Any:
        try:
            return _build(family, many, value)
        except RealityCheckError:
            return value  # refused by the constraint, whose hint says why

    check: Constraint = _ComponentOf(family, many)
    if default is None:
        check = OrNone(check)
    declared = param(default, check, convert=build, doc=doc, aliases=aliases)
    return dataclasses.field(default=default, metadata={**declared.metadata, "component": family})


def _build(family: str | Registry[Any], many: bool, value: Any) -> Any:
    if value is None:
        return None
    registry = registry_of(family)
    if many:
        items = value if isinstance(value, list | tuple) else (value,)
        return tuple(registry.build(v) for v in items)
    return registry.build(value)
