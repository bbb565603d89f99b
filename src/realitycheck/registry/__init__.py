"""Registries of components, filled by decorators, never listed by hand.

A component is a frozen, keyword-only dataclass whose fields are its
configuration. The family decorator (:func:`dataset`, :func:`labeler`,
:func:`detector`, :func:`study`, :func:`backend`) gives it a name; every
instance can then say what it is (:attr:`Component.spec`) and under which key
its records are stored (:attr:`Component.key`, e.g. ``rouge_l[threshold=0.5]``).
The same key syntax builds a component back from a string
(:meth:`Registry.create_from_key`), and a spec builds it back from a mapping
(:meth:`Registry.create_from_spec`), so a stored record always leads to the
component that made it.

Names are snake_case in every family (``nq_open``, ``label_noise``); the
hyphenated spelling (``nq-open``) is accepted as an alias of the same
component, and a misspelt name gets "did you mean" with the canonical name.

A parameter may itself hold a component (a judge's backend): declare it with
:func:`nested`. It is built once, when the outer component is, from an
instance, a key or a ``{name, params}`` mapping; its spec nests in the outer
spec and its key in the outer key::

    semantic_entropy[equivalence=llm,judge=openai[model=gpt-4o-mini]]

    [[detectors]]   # in TOML
    name = "semantic_entropy"
    params = { equivalence = "llm", judge = { name = "openai", params = { model = "m" } } }

A renamed parameter keeps its former names at its field
(``nested("backends", aliases=("backend",))``, or :func:`~realitycheck.params.param`'s
``aliases``): a key, spec or call that uses one still builds, with a
``FutureWarning`` that names the new one, and is written back with the new
name only. Every component that asks a model calls it ``judge``.

The key syntax (quotes, lists, nesting) is documented in
:mod:`realitycheck.registry._key_syntax`. :meth:`Registry.describe` documents a
component from its docstring and fields without building it.

Third-party packages add components through the entry-point groups
``realitycheck.<family>`` (``realitycheck.labelers``, ``realitycheck.detectors``…):
each entry point names a module that registers its components with the
decorators when imported.

A built-in name imports only the module that declares it (see
:mod:`realitycheck.registry._discover`); other names and :meth:`Registry.names` import
the whole family and its plugins.
"""

from realitycheck.registry._component import Component
from realitycheck.registry._component_docs import ComponentDoc, singular
from realitycheck.registry._key_syntax import parse_key, split_keys
from realitycheck.registry._lazy import lazy_names
from realitycheck.registry._nested import nested
from realitycheck.registry._registry import Registry, registry_of

__all__ = [
    "Component",
    "ComponentDoc",
    "Registry",
    "lazy_names",
    "nested",
    "parse_key",
    "registry_of",
    "singular",
    "split_keys",
]
