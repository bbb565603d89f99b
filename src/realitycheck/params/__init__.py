"""Parameters declared once: a constraint at each field, checked in one place.

A component's field says what it accepts where it is declared::

    @dataclass(frozen=True, kw_only=True)
    class RougeL(Labeler):
        threshold: float = param(0.3, Interval(float, 0, 1))
        use_stemmer: bool = param(False, InstanceOf(bool))

:func:`param` returns a :func:`dataclasses.field` that carries the constraints
(and an optional normaliser, e.g. a list to a tuple) in its metadata;
:class:`~realitycheck.registry.Component` calls :func:`check_params` after
every construction, which normalises and checks each declared field and raises
:class:`~realitycheck.errors.InvalidInputError` with one message shape, the
one scikit-learn's ``validate_params`` uses::

    The 'threshold' parameter of rouge_l must be a float in [0, 1]. Got 1.5 instead.

Plain functions (the metrics) check their arguments with :func:`check_arg`
and the same constraint objects; a check that spans several parameters builds
its message with :func:`param_error`, so the shape lives here only. Each
constraint describes itself in words (:meth:`Constraint.describe`);
:func:`constraint_text` and :func:`param_doc` give a field's, for a
component's documentation (``Registry.describe``). A TOML file's tables are
read as such dataclasses, with each message naming the file, line and key, by
:mod:`realitycheck.params.toml_lines`.

Why not pydantic or attrs: the checks needed are a handful of ranges, choice
lists and sequences; this module imports in a few milliseconds with the
standard library only (pydantic's dataclasses take over 100 ms, against a
command-line start-up target of half a second), adds no dependency, and
gives exactly the message shape above.
"""

from realitycheck.params._constraints import (
    AnyOf,
    Constraint,
    EnvVarName,
    InstanceOf,
    Interval,
    NonEmptyStr,
    OneOf,
    OrNone,
    PathLike,
    Satisfies,
    SequenceOf,
    as_tuple,
    as_unique_tuple,
    shown,
)
from realitycheck.params._fields import (
    check_arg,
    check_params,
    constraint_text,
    constraints_of,
    converter_of,
    default_of,
    param,
    param_aliases,
    param_doc,
    param_error,
    renamed_params,
    required,
    with_default,
)

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
    "shown",
    "with_default",
]
