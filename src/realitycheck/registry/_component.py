"""The base of every component: parameters, spec and key (:class:`Component`).

A component is a frozen, keyword-only dataclass whose fields are its
configuration; it can say what it is (:attr:`Component.spec`) and under which
key its records are stored (:attr:`Component.key`). A renamed field keeps its
former names (:func:`accept_former_names`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
import warnings
from typing import Any, ClassVar

from realitycheck.errors import InvalidInputError
from realitycheck.params import check_params, renamed_params
from realitycheck.registry._component_docs import default_of, singular
from realitycheck.registry._key_syntax import format_value

__all__ = ["Component", "accept_former_names"]


class Component:
    """Base of every registered component (datasets, labelers, detectors).

    Subclasses are frozen keyword-only dataclasses; their fields are their
    parameters. They hold configuration only, never results.
    """

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    version: ClassVar[str] = "1"

    def __post_init__(self) -> None:
        """Normalise and check the declared parameters (:func:`realitycheck.params.check_params`).

        A subclass with checks across parameters runs them in its own
        ``__post_init__`` after calling this one.
        """
        check_params(self)

    def params(self) -> dict[str, Any]:
        """Return the parameters of this instance as plain JSON-able values.

        A nested component is given as its own spec ``{name, params, version}``.
        """
        if not dataclasses.is_dataclass(self):
            return {}
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.init}

    def _non_default_params(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if not f.init or not f.metadata.get("in_key", True):
                continue
            value = getattr(self, f.name)
            if _plain(value) != _plain(default_of(f)):
                out[f.name] = value
        return out

    def nested(self) -> tuple[Component, ...]:
        """Return the components this one holds (see :func:`nested`), depth first."""
        out: list[Component] = []
        if not dataclasses.is_dataclass(self):
            return ()
        for f in dataclasses.fields(self):
            if "component" not in f.metadata:
                continue
            value = getattr(self, f.name)
            for inner in value if isinstance(value, tuple | list) else (value,):
                if isinstance(inner, Component):
                    out.append(inner)
                    out.extend(inner.nested())
        return tuple(out)

    @property
    def spec(self) -> dict[str, Any]:
        """``{name, params, version}``: everything needed to rebuild this instance."""
        return {"name": self.name, "params": self.params(), "version": self.version}

    @functools.cached_property
    def spec_json(self) -> str:
        """The spec as canonical JSON text (stored with every record)."""
        return json.dumps(self.spec, sort_keys=True, default=str)

    @functools.cached_property
    def key(self) -> str:
        """Short stable identifier: the name, plus the parameters that differ from defaults.

        A nested component is written as its own key:
        ``semantic_entropy[equivalence=llm,judge=openai[model=gpt-4o-mini]]``.
        """
        params = self._non_default_params()
        if not params:
            return self.name
        inner = ",".join(f"{k}={format_value(v)}" for k, v in sorted(params.items()))
        return f"{self.name}[{inner}]"


def accept_former_names(cls: type[Component]) -> None:
    """Let the constructor of ``cls`` take the former names of its renamed fields.

    A field declares its former names (``nested(..., aliases=("backend",))``).
    Whether the component is built from a key, a spec (a manifest written
    before the rename) or in Python, a former name still builds, with a
    ``FutureWarning`` that names the new one; the instance, its key and its
    spec know only the new name.
    """
    if not dataclasses.is_dataclass(cls) or "_former_names" in vars(cls):
        return
    renames = renamed_params(cls)
    if not renames:
        return
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self: Component, *args: Any, **params: Any) -> None:  # noqa: N807
        if renames.keys() & params.keys():
            params = _renamed(type(self), renames, params)
        init(self, *args, **params)

    cls.__init__ = __init__
    cls._former_names = renames


def _renamed(
    cls: type[Component], renames: dict[str, str], params: dict[str, Any]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p, value in params.items():
        new = renames.get(p)
        if new is None:
            out[p] = value
            continue
        if new in params:
            raise InvalidInputError(
                f"The {singular(cls.family)} {cls.name!r} was given both {new!r} and its "
                f"former name {p!r}. Give {new!r} only."
            )
        warnings.warn(
            f"{p!r} is now {new!r}: write {cls.name}[{new}=...] (the parameter {p!r} of "
            f"{cls.name} still builds, for now, and is stored as {new!r}).",
            FutureWarning,
            stacklevel=_caller_level(),
        )
        out[new] = value
    return out


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside realitycheck, for a warning to point at."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(
        "realitycheck."
    ):
        level, frame = level + 1, frame.f_back
    return level


def _plain(value: Any) -> Any:
    if isinstance(value, Component):
        return value.spec
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "__fspath__"):
        return str(value)
    return value
