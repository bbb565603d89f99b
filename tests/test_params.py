"""The parameter helper: each constraint, the one message shape, converters, field walks."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Literal

import numpy as np
import pytest

from realitycheck.errors import InvalidInputError
from realitycheck.params import (
    AnyOf,
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
    check_arg,
    check_params,
    constraint_text,
    param,
    param_doc,
    param_error,
    required,
    with_default,
)

# What the message looks like, whatever the constraint.
SHAPE = re.compile(r"^The '(\w+)' parameter of ([\w.\-]+) must be (.+)\. Got (.+) instead\.( .+)?$")


@pytest.mark.parametrize(
    ("constraint", "good", "bad"),
    [
        (Interval(float, 0, 1), [0, 0.5, 1, 1.0, np.float32(0.25), np.int64(1)], [-0.1, 1.5]),
        (Interval(float, 0, 1, closed="neither"), [0.5, 1e-9], [0, 1, 0.0]),
        (Interval(float, 0, 1, closed="left"), [0, 0.999], [1]),
        (Interval(float, 0, 1, closed="right"), [1, 0.001], [0]),
        (Interval(float, 0, closed="neither"), [1e-12, 1e300, math.inf], [0, -1]),
        (Interval(int, 1), [1, 2, 10**20, np.int64(3)], [0, -5, 1.0, 2.5, "3", None]),
        (Interval(int), [-3, 0], [0.5]),
        (OneOf("a", "b"), ["a", "b"], ["c", "A", None, 1]),
        (OneOf(Literal["x", "y"]), ["x", "y"], ["z"]),
        (OneOf({"k": 1, "l": 2}), ["k", "l"], [1]),
        (OneOf(0, 1), [0, 1], [True, False, 2]),
        (OneOf(True, None), [True, None], [1]),
        (InstanceOf(bool), [True, False], [0, 1, "true", None]),
        (InstanceOf(str, Path, name="a path"), ["x", Path("x")], [1]),
        (NonEmptyStr(), ["a", " a "], ["", "   ", 1, None, b"a"]),
        (NonEmptyStr(blank=True), ["a", "\n", " "], ["", None]),
        (PathLike(), ["x.csv", Path("x.csv")], ["", " ", None, 3]),
        (EnvVarName(), ["OPENAI_API_KEY", "_X1"], ["", "1X", "sk-abc", "A B", None]),
        (OrNone(Interval(int, 0)), [None, 0, 5], [-1, True]),
        (AnyOf(OneOf("auroc"), Satisfies(callable, "a callable")), ["auroc", len], ["x", 1]),
        (SequenceOf(Interval(int, 0)), [(), (0, 1), [2]], [(-1,), (True,), "01", 5, None]),
        (SequenceOf(min_length=1, unique=True), [("a",), ("a", "b")], [(), ("a", "a")]),
        (SequenceOf(Interval(float, 0), length=2), [(0, 1.5), [1, 2]], [(1,), (1, 2, 3), (1, -1)]),
        (Satisfies(lambda v: v.endswith(".csv"), "a .csv name"), ["a.csv"], ["a.tsv", 3]),
    ],
)
def test_each_constraint_accepts_and_rejects(constraint, good, bad):
    for value in good:
        assert constraint.accepts(value), (constraint, value)
    for value in bad:
        assert not constraint.accepts(value), (constraint, value)


@pytest.mark.parametrize("kind", [int, float])
@pytest.mark.parametrize("value", [True, False])
def test_a_bool_is_never_a_number(kind, value):
    assert not Interval(kind).accepts(value)
    with pytest.raises(InvalidInputError, match=f"Got {value} instead"):
        check_arg(value, Interval(kind), name="n", owner="f")


@pytest.mark.parametrize("nan", [float("nan"), np.nan, np.float32("nan")])
def test_nan_is_never_in_a_range(nan):
    assert not Interval(float).accepts(nan)
    assert not Interval(float, 0, 1).accepts(nan)


@pytest.mark.parametrize(
    ("constraint", "text"),
    [
        (Interval(float, 0, 1), "a float in [0, 1]"),
        (Interval(float, 0, 1, closed="right"), "a float in (0, 1]"),
        (Interval(float, 0, 1, closed="left"), "a float in [0, 1)"),
        (Interval(float, -1, 1, closed="neither"), "a float in (-1, 1)"),
        (Interval(int, 1), "an int >= 1"),
        (Interval(float, 0, closed="neither"), "a float > 0"),
        (Interval(float, 1e-3), "a float >= 0.001"),
        (Interval(int, None, 10), "an int <= 10"),
        (Interval(int, None, 10, closed="left"), "an int < 10"),
        (Interval(float), "a float"),
        (OneOf("chat", "completions"), "one of ('chat', 'completions')"),
        (InstanceOf(bool), "a bool"),
        (InstanceOf(int), "an int"),
        (OrNone(Interval(int, 0)), "an int >= 0 or None"),
        (SequenceOf(Interval(int, 0)), "a list, each item an int >= 0"),
        (
            SequenceOf(OneOf("a"), min_length=1, unique=True),
            "a non-empty list without repeats, each item one of ('a')",
        ),
        (SequenceOf(Interval(float, 0), length=2), "a pair, each item a float >= 0"),
        (AnyOf(OneOf("x"), InstanceOf(bool)), "one of ('x') or a bool"),
    ],
)
def test_each_constraint_describes_itself(constraint, text):
    assert constraint.describe() == text


def test_the_message_has_exactly_one_shape():
    with pytest.raises(InvalidInputError) as info:
        check_arg(1.5, Interval(float, 0, 1), name="threshold", owner="rouge_l")
    assert str(info.value) == (
        "The 'threshold' parameter of rouge_l must be a float in [0, 1]. Got 1.5 instead."
    )
    assert str(param_error("k", "f", "an int >= 1", 0)) == (
        "The 'k' parameter of f must be an int >= 1. Got 0 instead."
    )
    assert str(param_error("k", "f", "x", got="an array of shape (3,)", hint="See y.")) == (
        "The 'k' parameter of f must be x. Got an array of shape (3,) instead. See y."
    )


def test_a_close_string_gets_did_you_mean():
    with pytest.raises(InvalidInputError) as info:
        check_arg("lst", OneOf("last", "mean"), name="pooling", owner="eigenscore")
    assert str(info.value) == (
        "The 'pooling' parameter of eigenscore must be one of ('last', 'mean'). "
        "Got 'lst' instead. Did you mean 'last'?"
    )


def test_a_sequence_names_its_first_bad_item():
    with pytest.raises(InvalidInputError) as info:
        check_arg(("qa", "sumary"), SequenceOf(OneOf("qa", "summary")), name="tasks", owner="x")
    assert str(info.value).endswith(
        "Got ('qa', 'sumary') instead. Item 1 is 'sumary'. Did you mean 'summary'?"
    )


def test_long_values_are_cut_and_objects_named_by_type():
    with pytest.raises(InvalidInputError) as info:
        check_arg("x" * 1000, OneOf("a"), name="p", owner="f")
    assert len(str(info.value)) < 300 and "..." in str(info.value)
    with pytest.raises(InvalidInputError, match="Got a list of 500 items instead. Item 7 is -1"):
        check_arg([0] * 7 + [-1] * 493, SequenceOf(Interval(int, 0)), name="p", owner="f")
    with pytest.raises(InvalidInputError, match="Got an object instead"):
        check_arg(object(), InstanceOf(Path, name="a Path"), name="p", owner="f")


@pytest.mark.parametrize("secret", ["sk-abc123xyz", "sk proj 12345", "A=B"])
def test_a_secret_given_for_a_variable_name_is_never_echoed(secret):
    with pytest.raises(InvalidInputError, match="NAME of an environment variable") as info:
        check_arg(secret, EnvVarName(), name="api_key_env", owner="openai")
    assert secret not in str(info.value) and "abc" not in str(info.value)
    assert SHAPE.match(str(info.value))


def test_converters_normalise_before_the_check():
    assert as_tuple("a") == ("a",) and as_tuple(3) == (3,) and as_tuple(["a", "b"]) == ("a", "b")
    assert as_tuple(None) is None and as_tuple({"a": 1}) == {"a": 1}
    assert as_unique_tuple(["a", "b", "a"]) == ("a", "b")
    assert as_unique_tuple([["x"], ["x"]]) == (["x"], ["x"])  # unhashable: left for the check
    assert check_arg(
        [1, 2], SequenceOf(Interval(int, 0)), name="k", owner="f", convert=as_tuple
    ) == (
        1,
        2,
    )
    # The message shows what was given, not what the converter made of it.
    with pytest.raises(InvalidInputError, match=r"Got \[1, -2\] instead"):
        check_arg([1, -2], SequenceOf(Interval(int, 0)), name="k", owner="f", convert=as_tuple)


def test_a_converter_that_raises_leaves_the_value_to_the_check():
    with pytest.raises(InvalidInputError, match="Got 'abc' instead"):
        check_arg("abc", Interval(float), name="x", owner="f", convert=float)
    assert check_arg("2.5", Interval(float), name="x", owner="f", convert=float) == 2.5


Unit = Literal["words", "chars"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Config:
    name = "my_component"
    path: str = required(NonEmptyStr())
    threshold: float = param(0.3, Interval(float, 0, 1), doc="the cut-off")
    unit: Unit = param("words", OneOf(Unit))
    tasks: tuple[str, ...] = param(("qa",), SequenceOf(OneOf("qa", "summary")), convert=as_tuple)
    layers: tuple[int, ...] = param(default_factory=tuple, convert=as_tuple)
    workers: int = param(4, Interval(int, 1), in_key=False)
    free: str = ""

    def __post_init__(self) -> None:
        check_params(self)


def test_check_params_converts_frozen_fields_and_names_the_owner():
    config = _Config(path="x", tasks="summary", layers=[1, 2])
    assert config.tasks == ("summary",) and config.layers == (1, 2)
    with pytest.raises(InvalidInputError) as info:
        _Config(path="x", threshold=2)
    assert str(info.value) == (
        "The 'threshold' parameter of my_component must be a float in [0, 1]. Got 2 instead."
    )
    with pytest.raises(InvalidInputError, match="'path' parameter of my_component"):
        _Config(path="")
    object.__setattr__(config, "unit", "tokens")
    with pytest.raises(InvalidInputError, match="'unit' parameter of Other must be one of"):
        check_params(config, owner="Other")


def test_a_subclass_changes_a_default_and_keeps_the_constraints():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Narrow(_Config):
        threshold: float = with_default(_Config, "threshold", 0.9)
        workers: int = with_default(_Config, "workers", 2)

    fields = {f.name: f for f in dataclasses.fields(Narrow)}
    assert fields["workers"].metadata["in_key"] is False
    assert Narrow(path="x").threshold == 0.9
    with pytest.raises(InvalidInputError, match=r"'threshold' .* of my_component .* \[0, 1\]"):
        Narrow(path="x", threshold=1.5)
    with pytest.raises(InvalidInputError, match="has no field 'nope'"):
        with_default(_Config, "nope", 1)


def test_the_owner_defaults_to_the_class_name_without_a_registered_name():
    @dataclasses.dataclass(frozen=True)
    class Settings:
        n: int = param(1, Interval(int, 1))

    with pytest.raises(InvalidInputError, match="'n' parameter of Settings must be an int >= 1"):
        check_params(Settings(n=0))


def test_the_field_metadata_keeps_in_key_and_describes_itself():
    fields = {f.name: f for f in dataclasses.fields(_Config)}
    assert fields["workers"].metadata["in_key"] is False
    assert fields["threshold"].metadata["in_key"] is True
    assert constraint_text(fields["threshold"]) == "a float in [0, 1]"
    assert constraint_text(fields["free"]) == "any value"
    assert constraint_text(fields["path"]) == "a non-empty str"
    assert constraint_text(fields["unit"]) == "one of ('words', 'chars')"
    assert constraint_text(fields["layers"]) == "any value"  # a converter, no constraint
    assert param_doc(fields["threshold"]) == "the cut-off"
    assert param_doc(fields["unit"]) == param_doc(fields["free"]) == ""


def test_a_param_refuses_what_is_not_a_constraint():
    with pytest.raises(InvalidInputError, match="must be Constraint objects"):
        param(0, (0, 1))
    with pytest.raises(InvalidInputError, match="Interval is of int or float"):
        Interval(str)
    with pytest.raises(InvalidInputError, match="'closed'"):
        Interval(int, 0, 1, closed="open")  # type: ignore[arg-type]
