from dataclasses import dataclass

import pytest

from realitycheck import InvalidInputError, UnknownComponentError, detectors, labelers
from realitycheck.registry import Component, Registry, parse_key


@pytest.mark.parametrize(
    ("text", "name", "params"),
    [
        ("rouge_l", "rouge_l", {}),
        ("rouge_l[threshold=0.5]", "rouge_l", {"threshold": 0.5}),
        ("length[unit=chars]", "length", {"unit": "chars"}),
        ("x[a=1,b=true,c=none,d=u+v]", "x", {"a": 1, "b": True, "c": None, "d": ["u", "v"]}),
    ],
)
def test_parse_key(text, name, params):
    assert parse_key(text) == (name, params)


def test_parse_key_rejects_malformed():
    with pytest.raises(InvalidInputError, match="must be key=value"):
        parse_key("rouge_l[threshold]")
    with pytest.raises(InvalidInputError, match="name or name"):
        parse_key("rouge l")


def test_unknown_name_lists_close_matches_and_all_names():
    with pytest.raises(UnknownComponentError, match=r"Did you mean 'rouge_l'\?.*Available: .*bleu"):
        labelers.get("rouge_k")
    with pytest.raises(UnknownComponentError, match="Available:"):
        detectors.get("zzzzzz")


def test_unknown_parameter_is_named_with_suggestion():
    with pytest.raises(
        InvalidInputError, match="no parameter 'treshold'. Did you mean 'threshold'"
    ):
        labelers.create("rouge_l", treshold=0.5)


def test_key_round_trips_and_omits_defaults():
    reg: Registry[Component] = Registry("widgets", "realitycheck.errors")

    @reg.register("widget")
    @dataclass(frozen=True, kw_only=True)
    class Widget(Component):
        size: int = 3
        tags: tuple[str, ...] = ()

    assert Widget().key == "widget"
    w = Widget(size=5, tags=("a", "b"))
    assert w.key == "widget[size=5,tags=a+b]"
    again = reg.create_from_key(w.key)
    assert again.spec == {
        "name": "widget",
        "params": {"size": 5, "tags": ["a", "b"]},
        "version": "1",
    }
    assert reg.names() == ["widget"]


def test_same_name_twice_is_refused():
    reg: Registry[Component] = Registry("widgets", "realitycheck.errors")

    @reg.register("w")
    @dataclass(frozen=True, kw_only=True)
    class A(Component):
        pass

    with pytest.raises(InvalidInputError, match="already taken"):

        @reg.register("w")
        @dataclass(frozen=True, kw_only=True)
        class B(Component):
            pass
