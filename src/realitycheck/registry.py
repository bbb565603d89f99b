"""Registries of components, filled by decorators, never listed by hand.

A component is a frozen, keyword-only dataclass whose fields are its
configuration. The family decorator (:func:`dataset`, :func:`labeler`,
:func:`detector`) gives it a name; every instance can then say what it is
(:attr:`Component.spec`) and under which key its records are stored
(:attr:`Component.key`, e.g. ``rouge_l[threshold=0.5]``). The same key syntax
builds a component back from a string (:meth:`Registry.create_from_key`), so a
stored record always leads to the component that made it.

Third-party packages add components through the entry-point groups
``realitycheck.datasets``, ``realitycheck.labelers`` and
``realitycheck.detectors``: each entry point names a module that registers its
components with the decorators when imported.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import json
import re
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any, ClassVar, Generic, TypeVar

from realitycheck._discover import import_submodules
from realitycheck.errors import InvalidInputError, UnknownComponentError
from realitycheck.params import check_params

__all__ = [
    "Component",
    "Registry",
    "parse_key",
]


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
        """Return the parameters of this instance as plain JSON-able values."""
        if not dataclasses.is_dataclass(self):
            return {}
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.init}

    def _non_default_params(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if not f.init or not f.metadata.get("in_key", True):
                continue
            value = getattr(self, f.name)
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                default = dataclasses.MISSING
            if _plain(value) != _plain(default):
                out[f.name] = _plain(value)
        return out

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
        """Short stable identifier: the name, plus the parameters that differ from defaults."""
        params = self._non_default_params()
        if not params:
            return self.name
        inner = ",".join(f"{k}={_format_value(v)}" for k, v in sorted(params.items()))
        return f"{self.name}[{inner}]"


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "__fspath__"):
        return str(value)
    return value


def _format_value(value: Any) -> str:
    if isinstance(value, list):
        return "+".join(_format_value(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_KEY = re.compile(r"^\s*([A-Za-z0-9_.:\-]+)\s*(?:\[(.*)\])?\s*$")


def _parse_value(text: str) -> Any:
    text = text.strip()
    if "+" in text:
        return [_parse_value(t) for t in text.split("+")]
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_key(text: str) -> tuple[str, dict[str, Any]]:
    """Split ``name[k=v,k2=v2]`` into the name and its parameters.

    Values are read as bool, int, float or string; ``a+b`` is a list.

    Raises:
        InvalidInputError: If the text is not of that shape.
    """
    match = _KEY.match(text)
    if match is None:
        raise InvalidInputError(
            f"A component must be written as name or name[key=value,...]. Got {text!r} instead."
        )
    name, inner = match.group(1), match.group(2)
    params: dict[str, Any] = {}
    if inner:
        for part in inner.split(","):
            if "=" not in part:
                raise InvalidInputError(
                    f"Each parameter of {text!r} must be key=value. Got {part!r} instead."
                )
            k, v = part.split("=", 1)
            params[k.strip()] = _parse_value(v)
    return name, params


T = TypeVar("T", bound=Component)


class Registry(Generic[T]):
    """Named components of one family.

    Args:
        family: Plural family name (``labelers``); also the entry-point group suffix.
        builtin_module: Module whose import registers the built-in components.
    """

    def __init__(self, family: str, builtin_module: str) -> None:
        self.family = family
        self._builtin_module = builtin_module
        self._items: dict[str, type[T]] = {}
        self._loaded = False

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        """Return a class decorator that registers a component under ``name``."""

        def decorate(cls: type[T]) -> type[T]:
            existing = self._items.get(name)
            if existing is not None and existing.__qualname__ != cls.__qualname__:
                raise InvalidInputError(
                    f"The {self.family[:-1]} name {name!r} is already taken by "
                    f"{existing.__module__}.{existing.__qualname__}."
                )
            cls.name = name
            cls.family = self.family
            self._items[name] = cls
            return cls

        return decorate

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        package = importlib.import_module(self._builtin_module)
        if hasattr(package, "__path__"):  # a package: every public submodule registers its own
            import_submodules(self._builtin_module, package.__path__)
        for ep in entry_points(group=f"realitycheck.{self.family}"):
            ep.load()

    def names(self) -> list[str]:
        """Return every registered name, sorted."""
        self._load()
        return sorted(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def get(self, name: str) -> type[T]:
        """Return the component class registered as ``name``.

        Raises:
            UnknownComponentError: With close matches and every available name.
        """
        self._load()
        try:
            return self._items[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._items, n=3, cutoff=0.5)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise UnknownComponentError(
                f"There is no {self.family[:-1]} named {name!r}.{hint} "
                f"Available: {', '.join(sorted(self._items))}."
            ) from None

    def create(self, name: str, **params: Any) -> T:
        """Build the component ``name`` with ``params``, checking the parameter names."""
        cls = self.get(name)
        allowed = [f.name for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
        for p in params:
            if p not in allowed:
                close = difflib.get_close_matches(p, allowed, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise InvalidInputError(
                    f"The {self.family[:-1]} {name!r} has no parameter {p!r}.{hint} "
                    f"Its parameters: {', '.join(allowed) or 'none'}."
                )
        try:
            return cls(**params)
        except TypeError as exc:
            raise InvalidInputError(f"Cannot build {name!r} with {params}: {exc}") from None

    def create_from_key(self, text: str) -> T:
        """Build a component from its key, e.g. ``rouge_l[threshold=0.5]``."""
        name, params = parse_key(text)
        return self.create(name, **params)
