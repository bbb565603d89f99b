"""The registry of one family: names, look-ups with "did you mean", building from keys and specs.

See :mod:`realitycheck.registry` for what a registry does; the key syntax is
documented in :mod:`realitycheck.registry._key_syntax`, and which module a
built-in name is imported from in :mod:`realitycheck.registry._discover`.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any, Generic, TypeVar

from realitycheck.errors import InvalidInputError, UnknownComponentError, did_you_mean
from realitycheck.params import renamed_params
from realitycheck.registry._component import Component, accept_former_names
from realitycheck.registry._component_docs import ComponentDoc, describe_class, singular
from realitycheck.registry._discover import (
    declared_names,
    import_submodules,
    plugin_entry_points,
)
from realitycheck.registry._key_syntax import parse_key

__all__ = ["Registry", "registry_of"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


T = TypeVar("T", bound=Component)


# How the command line takes a component of each family, in the order a name asked of the
# wrong family is looked for in the others (``label -l length``: length is a detector).
_USE = {
    "labelers": "realitycheck label -l {name}",
    "detectors": "realitycheck detect -D {name}",
    "datasets": "-d {name}",
    "backends": "realitycheck generate -b {name}",
    "studies": "realitycheck study {name} --run RUN",
}


def _alias(name: str) -> str:
    """The registered spelling of a hyphenated or padded name (`` nq-open`` → ``nq_open``)."""
    return name.strip().replace("-", "_")


class Registry(Generic[T]):
    """Named components of one family.

    Besides its components, a registry gives the family package's submodules
    as attributes, so ``realitycheck.datasets.files`` (a registry attribute of
    the top-level package) still leads to the module ``realitycheck.datasets.files``
    and its docstring.

    Args:
        family: Plural family name (``labelers``); also the entry-point group suffix.
        builtin_module: Module whose import registers the built-in components.
    """

    def __init__(self, family: str, builtin_module: str) -> None:
        self.family = family
        self._builtin_module = builtin_module
        self._items: dict[str, type[T]] = {}
        self._loaded = False
        self._declared: dict[str, str] | None = None

    @property
    def kind(self) -> str:
        """One member of the family, in words: ``study`` for ``studies``."""
        return singular(self.family)

    def __getattr__(self, name: str) -> ModuleType:
        if name.startswith("_"):
            raise AttributeError(name)
        module = f"{self._builtin_module}.{name}"
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            raise AttributeError(
                f"The {self.family} registry has no attribute or submodule {name!r}."
            ) from None

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        """Return a class decorator that registers a component under ``name``.

        Raises:
            InvalidInputError: If ``name`` is not snake_case or is taken by another class.
        """
        if not isinstance(name, str) or not _NAME.match(name):
            fixed = re.sub(r"[^a-z0-9_]+", "_", str(name).lower()).strip("_")
            raise InvalidInputError(
                f"A {self.kind} name must be snake_case (lower-case letters, digits "
                f"and underscores, starting with a letter), e.g. {fixed!r}. Got {name!r} instead."
            )

        def decorate(cls: type[T]) -> type[T]:
            existing = self._items.get(name)
            if existing is not None and existing.__qualname__ != cls.__qualname__:
                raise InvalidInputError(
                    f"The {self.kind} name {name!r} is already taken by "
                    f"{existing.__module__}.{existing.__qualname__}."
                )
            cls.name = name
            cls.family = self.family
            accept_former_names(cls)
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
        for ep in plugin_entry_points(self.family):  # one scan per process for every family
            ep.load()

    def _load_declared(self, name: str) -> None:
        """Import only the built-in module whose source declares ``name`` (``detect -D length``)."""
        if self._loaded or name in self._items:
            return
        if self._declared is None:
            package = importlib.import_module(self._builtin_module)
            path = getattr(package, "__path__", None)
            self._declared = (
                {} if path is None else declared_names(package.__name__, path, self.kind)
            )
        module = self._declared.get(name)
        if module is not None:
            importlib.import_module(module)

    def canonical(self, name: str) -> str | None:
        """Return the registered name that ``name`` spells (``nq-open`` → ``nq_open``), or None."""
        if not isinstance(name, str):
            return None
        spellings = tuple(dict.fromkeys((name, _alias(name))))
        for spelling in spellings:
            self._load_declared(spelling)
            if spelling in self._items:
                return spelling
        self._load()
        return next((s for s in spellings if s in self._items), None)

    def names(self) -> list[str]:
        """Return every registered (canonical) name, sorted."""
        self._load()
        return sorted(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.canonical(name) is not None

    def get(self, name: str) -> type[T]:
        """Return the component class registered as ``name`` (or its hyphenated alias).

        Raises:
            UnknownComponentError: With close matches and every available name.
        """
        found = self.canonical(name)
        if found is not None:
            return self._items[found]
        wanted = _alias(str(name))
        hint = self._elsewhere(wanted)
        if not hint:
            close = difflib.get_close_matches(wanted, self._items, n=3, cutoff=0.5)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownComponentError(
            f"There is no {self.kind} named {name!r}.{hint} "
            f"Available: {', '.join(sorted(self._items))}."
        )

    def _elsewhere(self, name: str) -> str:
        """`` 'length' is a detector, not a labeler: use …`` when another family knows ``name``.

        The families of :data:`_USE` but this one are asked in turn, for the
        names their built-in sources declare and their loaded components (a
        look-up imports at most the one module that declares the name); the
        first that knows it is named (``length`` is a detector and a study: to
        a labeler's look-up, a detector). ``""`` when none knows it.
        """
        for family, use in _USE.items():
            if family == self.family:
                continue
            other = registry_of(family)
            other._load_declared(name)
            if name in other._items:
                return (
                    f" {name!r} is a {other.kind}, not a {self.kind}: "
                    f"use `{use.format(name=name)}`."
                )
        return ""

    def create(self, name: str, /, **params: Any) -> T:
        """Build the component ``name`` with ``params``, checking the parameter names.

        A parameter declared with :func:`nested` takes a built component, a key
        or a ``{name, params}`` mapping.
        """
        cls = self.get(name)
        allowed = [f.name for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
        former = renamed_params(cls)
        for p in params:
            if p in former:
                continue  # a former name: the constructor renames it, with a warning
            if p not in allowed:
                hint = did_you_mean(p, allowed + list(former))
                raise InvalidInputError(
                    f"The {self.kind} {cls.name!r} has no parameter {p!r}.{hint} "
                    f"Its parameters: {', '.join(allowed) or 'none'}."
                )
        try:
            return cls(**params)
        except TypeError as exc:
            raise InvalidInputError(f"Cannot build {cls.name!r} with {params}: {exc}") from None

    def create_from_key(self, text: str) -> T:
        """Build a component from its key, e.g. ``rouge_l[threshold=0.5]``.

        ``create_from_key(c.key)`` gives back a component equal to ``c`` in
        every parameter that shows in keys (see :mod:`realitycheck.registry._key_syntax`).
        """
        name, params = parse_key(text)
        return self.create(name, **params)

    def create_from_spec(self, spec: Mapping[str, Any]) -> T:
        """Build a component from a spec ``{name, params, version}`` (a JSON object, a TOML table).

        ``params`` may be left out; nested components in it are specs or keys
        themselves. A spec of another version than the registered class's is
        built with a warning: its results may differ from the stored ones.

        Raises:
            InvalidInputError: If ``spec`` is not a mapping of that shape.
        """
        if not isinstance(spec, Mapping):
            raise InvalidInputError(
                f"A {self.kind} spec must be a table with a name and params. Got {spec!r} instead."
            )
        unknown = sorted(set(spec) - {"name", "params", "version"})
        if unknown or not isinstance(spec.get("name"), str):
            raise InvalidInputError(
                f'A {self.kind} spec must be a table {{name = "...", params = {{...}}}}'
                f"{' without ' + ', '.join(map(repr, unknown)) if unknown else ''}. "
                f"Got {dict(spec)!r} instead."
            )
        params = spec.get("params", {})
        if not isinstance(params, Mapping):
            raise InvalidInputError(
                f"The params of the {self.kind} {spec['name']!r} must be a table. "
                f"Got {params!r} instead."
            )
        component = self.create(spec["name"], **dict(params))
        version = spec.get("version")
        if version is not None and str(version) != component.version:
            warnings.warn(
                f"The spec of {component.key!r} is of version {version}; the installed "
                f"{self.kind} is of version {component.version}.",
                stacklevel=2,
            )
        return component

    def build(self, value: Any) -> T:
        """Return ``value`` built as a component of this family.

        ``value`` is a built component of this family (returned as is), a key
        (``openai[model=gpt-4o-mini]``) or a spec mapping (``{name, params}``).

        Raises:
            InvalidInputError: If ``value`` is none of those.
        """
        if isinstance(value, Component):
            if value.family != self.family or value.name not in self:
                raise InvalidInputError(
                    f"Expected a {self.kind}. Got the {singular(value.family)} "
                    f"{value.key!r} instead."
                )
            return value  # type: ignore[return-value]
        if isinstance(value, str):
            return self.create_from_key(value)
        if isinstance(value, Mapping):
            return self.create_from_spec(value)
        raise InvalidInputError(
            f"Expected a {self.kind}: a key such as name[key=value], a table "
            f"{{name, params}} or a built one. Got {value!r} instead."
        )

    def describe(self, name: str) -> ComponentDoc:
        """Document the component ``name`` from its docstring and fields, without building it."""
        cls = self.get(name)
        return describe_class(cls, family=self.family)


def registry_of(family: str | Registry[Any]) -> Registry[Any]:
    """Return the registry of ``family``: the built-in ``realitycheck.<family>.<family>``."""
    if isinstance(family, Registry):
        return family
    try:
        module = importlib.import_module(f"realitycheck.{family}")
    except ModuleNotFoundError:
        module = None
    registry = getattr(module, family, None)
    if not isinstance(registry, Registry):
        raise InvalidInputError(
            f"A nested component must name a family of realitycheck (backends, labelers, "
            f"detectors, datasets, studies) or pass its registry. Got {family!r} instead."
        )
    return registry
