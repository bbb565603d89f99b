import json
from dataclasses import dataclass

import numpy as np
import pytest

from realitycheck import InvalidInputError, UnknownComponentError, datasets, detectors, labelers
from realitycheck.params import as_tuple, param
from realitycheck.registry import Component, Registry, nested, parse_key, split_keys
from realitycheck.registry._key_syntax import format_value
from realitycheck.studies import studies


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


# -- key syntax: quotes, lists, nesting ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "params"),
    [
        ('x[a="a,b"]', {"a": "a,b"}),
        ('x[a="[not] nested+plus"]', {"a": "[not] nested+plus"}),
        ('x[a="1"]', {"a": "1"}),
        ('x[a=""]', {"a": ""}),
        (r'x[a="say \"hi\" \\ bye"]', {"a": 'say "hi" \\ bye'}),
        ("x[a=()]", {"a": []}),
        ('x[a="u,v"+w]', {"a": ["u,v", "w"]}),
        ("x[j=openai[model=gpt-4o-mini]]", {"j": "openai[model=gpt-4o-mini]"}),
        ('x[j=openai[model="a,b"],k=2]', {"j": 'openai[model="a,b"]', "k": 2}),
        ("x[j=mock[reply=a]+mock[reply=b]]", {"j": ["mock[reply=a]", "mock[reply=b]"]}),
        ("x[u=http://127.0.0.1:8000/v1]", {"u": "http://127.0.0.1:8000/v1"}),
        ("x[]", {}),
    ],
)
def test_parse_key_reads_quotes_lists_and_nested_keys(text, params):
    assert parse_key(text) == ("x", params)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('x[a="open]', r"quote \(\"\) is not closed"),
        ("x[a=b[c=1]", "'\\[' is not closed"),
        ("x[a=b]]", "name or name"),
        ("x[a=1]y", "name or name"),
        ('x[a=ab"c"]', "quoted as a whole"),
        ('x[a="ab"c]', "quoted as a whole"),
        ("x[a=u++v]", "empty item"),
        ("x[a=1,a=2]", "given twice"),
        ("x[a=[b]]", "nested component"),
        ("x[j=openai[model]]", "must be key=value"),
        ("x[1a=2]", "identifier"),
    ],
)
def test_parse_key_rejects_malformed_with_the_reason(text, match):
    with pytest.raises(InvalidInputError, match=match):
        parse_key(text)


_ALPHABET = list('ab1 ,+[]"\\=:.-()') + ["true", "none", "1.5", "nan", "x[y=1]", "  "]


def _random_value(rng, *, scalar=False):
    kind = rng.integers(5 if scalar else 6)
    if kind == 0:
        return int(rng.integers(-1000, 1000))
    if kind == 1:
        return float(rng.normal()) * 10 ** int(rng.integers(-8, 8))
    if kind == 2:
        return bool(rng.integers(2))
    if kind == 3:
        return None
    n = int(rng.integers(0, 6))
    text = "".join(_ALPHABET[i] for i in rng.integers(len(_ALPHABET), size=n))
    if kind == 4:
        return text
    return [text, *(_random_value(rng, scalar=True) for _ in range(int(rng.integers(0, 3))))]


@pytest.mark.parametrize("seed", range(8))
def test_every_value_written_in_a_key_reads_back_unchanged(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        value = _random_value(rng)
        expected = value[0] if isinstance(value, list) and len(value) == 1 else value
        (_, params) = parse_key(f"x[v={format_value(value)}]")
        assert params == {"v": expected}, (value, format_value(value))


def test_split_keys_keeps_brackets_and_quotes():
    text = 'rouge_l[threshold=0.5,use_stemmer=true], files[path="a,b.csv"] ,bleu,'
    assert split_keys(text) == [
        "rouge_l[threshold=0.5,use_stemmer=true]",
        'files[path="a,b.csv"]',
        "bleu",
    ]


# -- names: one casing, aliases, did-you-mean ----------------------------------------------


def test_hyphenated_names_are_aliases_of_the_snake_case_ones():
    assert datasets.get("nq-open") is datasets.get("nq_open")
    assert "label-noise" in studies and "label_noise" in studies
    assert studies.create_from_key("label-noise").key == "label_noise"
    assert datasets.create_from_key("halueval-general").spec["name"] == "halueval_general"


def test_did_you_mean_suggests_the_canonical_name():
    with pytest.raises(UnknownComponentError, match=r"Did you mean 'label_noise'"):
        studies.get("label-nose")
    with pytest.raises(UnknownComponentError, match=r"Did you mean 'nq_open'"):
        datasets.get("nq_opn")


def test_only_snake_case_names_can_be_registered():
    reg: Registry[Component] = Registry("widgets", "realitycheck.errors")
    with pytest.raises(InvalidInputError, match="must be snake_case.*'my_widget'"):
        reg.register("My-Widget")


def test_the_family_attribute_still_leads_to_the_submodules():
    import pydoc

    import realitycheck

    assert "column mapping" in realitycheck.datasets.files.__doc__
    assert pydoc.locate("realitycheck.datasets.files") is realitycheck.datasets.files
    assert realitycheck.detectors.semantic_entropy.SemanticEntropy.name == "semantic_entropy"
    with pytest.raises(AttributeError, match="no attribute or submodule 'nope'"):
        _ = realitycheck.datasets.nope


# -- nested components ----------------------------------------------------------------------

parts: Registry[Component] = Registry("parts", "realitycheck.errors")
holders: Registry[Component] = Registry("holders", "realitycheck.errors")


@parts.register("part")
@dataclass(frozen=True, kw_only=True)
class Part(Component):
    """A part.

    Args:
        size: How big.
        label: What it says.
        tags: Its tags.
    """

    size: int = 1
    label: str = "plain"
    tags: tuple[str, ...] = param((), convert=as_tuple)


@parts.register("bolt")
@dataclass(frozen=True, kw_only=True)
class Bolt(Component):
    """A bolt.

    Args:
        thread: Its thread.
    """

    thread: str


@holders.register("holder")
@dataclass(frozen=True, kw_only=True)
class Holder(Component):
    """Holds parts.

    Args:
        main: The main part.
        spares: Spare parts.
        weight: Its weight.
    """

    main: Component | None = nested(parts)
    spares: tuple[Component, ...] = nested(parts, default=(), many=True)
    weight: float = 1.0


def _random_part(rng):
    if rng.random() < 0.3:
        return Bolt(thread=str(_random_text(rng)) or "M4")
    tags = tuple(_random_text(rng) for _ in range(int(rng.integers(0, 3))))
    return Part(size=int(rng.integers(0, 4)), label=_random_text(rng), tags=tags)


def _random_text(rng):
    n = int(rng.integers(0, 5))
    return "".join(_ALPHABET[i] for i in rng.integers(len(_ALPHABET), size=n))


@pytest.mark.parametrize("seed", range(10))
def test_nested_components_round_trip_through_key_and_spec(seed):
    rng = np.random.default_rng(seed)
    for _ in range(30):
        main = _random_part(rng) if rng.random() < 0.8 else None
        spares = tuple(_random_part(rng) for _ in range(int(rng.integers(0, 3))))
        holder = Holder(main=main, spares=spares, weight=float(rng.integers(1, 4)) / 2)
        assert holders.create_from_key(holder.key) == holder, holder.key
        assert holders.create_from_spec(holder.spec) == holder
        assert holders.create_from_spec(json.loads(holder.spec_json)) == holder
        if main is not None:
            assert holder.spec["params"]["main"] == main.spec
            assert f"main={main.key}" in holder.key
        assert holder.nested() == tuple(p for p in (main, *spares) if p is not None)


def test_a_nested_component_is_given_as_an_instance_a_key_or_a_spec_and_built_once():
    by_key = Holder(main="part[size=3,tags=a+b]")
    by_spec = holders.create(
        "holder", main={"name": "part", "params": {"size": 3, "tags": ["a", "b"]}}
    )
    by_instance = Holder(main=Part(size=3, tags=("a", "b")))
    assert by_key == by_spec == by_instance
    assert isinstance(by_key.main, Part) and by_key.key == "holder[main=part[size=3,tags=a+b]]"
    assert by_key.spec["params"]["main"] == {
        "name": "part",
        "params": {"size": 3, "label": "plain", "tags": ["a", "b"]},
        "version": "1",
    }
    many = holders.create_from_key("holder[spares=part+bolt[thread=M4]]")
    assert many.spares == (Part(), Bolt(thread="M4"))
    assert Holder(spares=["part", {"name": "bolt", "params": {"thread": "M4"}}]) == many


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("prat", "no part named 'prat'. Did you mean 'part'"),
        ({"name": "part", "parms": {}}, "without 'parms'"),
        ({"params": {}}, "must be a table"),
        (3, "Expected a part"),
        ("part[sise=2]", "no parameter 'sise'. Did you mean 'size'"),
        ("bolt", "missing 1 required keyword-only argument: 'thread'"),
    ],
)
def test_a_bad_nested_component_fails_when_the_holder_is_built(value, match):
    with pytest.raises(InvalidInputError, match=match):
        holders.create("holder", main=value)


def test_a_component_of_another_family_is_refused():
    with pytest.raises(InvalidInputError, match="Expected a part. Got the holder 'holder'"):
        Holder(main=Holder())


def test_a_spec_of_another_version_is_built_with_a_warning():
    with pytest.warns(UserWarning, match="version 0"):
        part = parts.create_from_spec({"name": "part", "params": {"size": 2}, "version": "0"})
    assert part == Part(size=2)


def test_describe_documents_a_class_without_building_it():
    doc = parts.describe("bolt")
    assert doc.summary == "A bolt."
    (thread,) = doc.params
    assert thread.required and thread.doc == "Its thread." and thread.type == "str"
    text = holders.describe("holder").to_text()
    assert "main: Component | None (default none)" in text and "must be a part" in text
