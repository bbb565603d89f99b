"""Every registered component declares each parameter's constraint once, at its field.

For each labeler, detector, dataset, backend and retriever: every parameter has a declared
constraint (:func:`realitycheck.params.param`) or is listed below as
deliberately unconstrained, with the reason; the defaults pass their own
constraints; and a value outside each declared range or choice list fails
when the component is built, with the one message shape.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from _component_fixtures import minimal

from realitycheck.errors import InvalidInputError
from realitycheck.params import Interval, OneOf, OrNone, constraints_of
from realitycheck.registry import registry_of

# The families converted so far; studies follow.
FAMILIES = ("labelers", "detectors", "datasets", "backends", "retrievers")

# Parameters without a declared constraint, on purpose: (component, field) -> why.
UNCONSTRAINED: dict[tuple[str, str], str] = {}
# Components whose parameters are not declared yet: name -> why.
PENDING: dict[str, str] = {}
SHAPE = re.compile(r"^The '(\w+)' parameter of (\S+) must be (.+)\. Got (.+) instead\.( .+)?$")

COMPONENTS = [
    (family, name)
    for family in FAMILIES
    for name in registry_of(family).names()
    if name not in PENDING
]


def _fields(family: str, name: str) -> list[dataclasses.Field]:
    cls = registry_of(family).get(name)
    return [f for f in dataclasses.fields(cls) if f.init]


@pytest.mark.parametrize(("family", "name"), COMPONENTS)
def test_every_parameter_declares_its_constraint(family, name):
    undeclared = [
        f.name
        for f in _fields(family, name)
        if not constraints_of(f) and (name, f.name) not in UNCONSTRAINED
    ]
    assert not undeclared, f"{family} {name}: declare the constraints of {undeclared} with param()"


@pytest.mark.parametrize(("family", "name"), COMPONENTS)
def test_the_defaults_pass_their_own_constraints(family, name):
    registry_of(family).create(name, **minimal(family, name))


def _outside(constraint) -> list:
    """Values the constraint refuses: past each end of a range, off a choice list."""
    if isinstance(constraint, OrNone):
        constraint = constraint.inner
    if isinstance(constraint, OneOf):
        return ["not-a-choice"]
    if not isinstance(constraint, Interval):
        return []
    values: list = [True, "1"]
    step = 1 if constraint.kind is int else 0.5
    if constraint.low is not None:
        values.append(constraint.low - step)
    if constraint.high is not None:
        values.append(constraint.high + step)
    if constraint.kind is int:
        values.append(1.5)
    else:
        values.append(float("nan"))
    return values


CASES = [
    pytest.param(family, name, f.name, value, id=f"{name}.{f.name}={value!r}")
    for family, name in COMPONENTS
    for f in _fields(family, name)
    for constraint in constraints_of(f)
    for value in _outside(constraint)
]


@pytest.mark.parametrize(("family", "name", "field", "value"), CASES)
def test_a_value_outside_a_declared_constraint_fails_with_the_one_shape(family, name, field, value):
    params = {**minimal(family, name), field: value}
    with pytest.raises(InvalidInputError) as info:
        registry_of(family).create(name, **params)
    match = SHAPE.match(str(info.value))
    assert match, str(info.value)
    assert match.group(1) == field and match.group(2) == name


def test_the_walk_covers_ranges_and_choices():
    covered = {case.values[1:3] for case in CASES}
    assert {("rouge_l", "threshold"), ("source_overlap", "n"), ("eigenscore", "pooling")} <= covered
