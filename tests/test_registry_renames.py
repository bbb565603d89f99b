"""Renamed parameters: a former name still builds, with a warning that names the new one."""

import dataclasses
import warnings

import pytest

from realitycheck import InvalidInputError, detectors, labelers
from realitycheck.backends import backends
from realitycheck.registry import Component, Registry, nested

# Every LLM-backed component calls its nested LLM ``judge``; these are the former names.
RENAMED = [
    (detectors, "p_true", "backend"),
    (detectors, "surprisal", "backend"),
    (labelers, "nli", "classifier"),
    (detectors, "selfcheck_nli", "classifier"),
    (detectors, "nli_grounding", "classifier"),
    (detectors, "cross_encoder", "classifier"),
    (detectors, "claim_check", "classifier"),
    # 'backend' was never these components' name, but the README once said qa_judge[backend=…]
    (labelers, "qa_judge", "backend"),
    (labelers, "faithjudge", "backend"),
    (detectors, "selfcheck_prompt", "backend"),
]


def _built_silently(registry, key):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return registry.create_from_key(key)


@pytest.mark.parametrize(("registry", "name", "former"), RENAMED)
def test_the_former_name_builds_with_a_message_that_names_judge(registry, name, former):
    new = _built_silently(registry, f"{name}[judge=mock]")
    with pytest.warns(FutureWarning, match=f"'{former}' is now 'judge'") as caught:
        old = registry.create_from_key(f"{name}[{former}=mock]")
    assert len(caught) == 1
    assert f"{name}[judge=" in str(caught[0].message)
    assert caught[0].filename == __file__  # it points at the caller, not at realitycheck
    assert old == new
    assert old.key == new.key == f"{name}[judge=mock]"
    assert former not in old.spec["params"]
    assert old.spec["params"]["judge"]["name"] == "mock"


@pytest.mark.parametrize(("registry", "name", "former"), RENAMED)
def test_a_spec_stored_before_the_rename_rebuilds_and_is_rewritten_with_the_new_name(
    registry, name, former
):
    new = _built_silently(registry, f"{name}[judge=mock[model=m]]")
    stored = dict(new.spec)
    stored["params"] = {(former if k == "judge" else k): v for k, v in new.spec["params"].items()}
    with pytest.warns(FutureWarning, match=f"'{former}' is now 'judge'"):
        rebuilt = registry.create_from_spec(stored)
    assert rebuilt == new
    assert rebuilt.spec == new.spec
    assert rebuilt.spec_json == new.spec_json


@pytest.mark.parametrize(("registry", "name", "former"), RENAMED)
def test_the_former_name_builds_in_python_too(registry, name, former):
    cls = registry.get(name)
    judge = backends.create("mock")
    with pytest.warns(FutureWarning, match=f"'{former}' is now 'judge'"):
        old = cls(**{former: judge})
    assert old == cls(judge=judge)


@pytest.mark.parametrize(("registry", "name", "former"), RENAMED)
def test_both_names_at_once_are_refused(registry, name, former):
    with pytest.raises(InvalidInputError, match=f"both 'judge' and its former name '{former}'"):
        registry.create_from_key(f"{name}[judge=mock,{former}=mock]")


def test_a_misspelt_former_name_is_suggested_and_listed_parameters_stay_the_current_ones():
    with pytest.raises(InvalidInputError, match=r"Did you mean 'backend'.*judge, top_logprobs"):
        detectors.create_from_key("p_true[backnd=mock]")


_TOYS: Registry[Component] = Registry("toys", "realitycheck.records")


@_TOYS.register("toy_holder")
@dataclasses.dataclass(frozen=True, kw_only=True)
class _Holder(Component):
    judge: Component = nested(
        "backends", default=dataclasses.MISSING, doc="the model", aliases=("backend", "llm")
    )


@pytest.mark.parametrize("former", ["backend", "llm"])
def test_aliases_are_declared_once_at_the_field(former):
    with pytest.warns(FutureWarning, match=f"'{former}' is now 'judge'"):
        built = _TOYS.create_from_key(f"toy_holder[{former}=mock]")
    assert built.key == "toy_holder[judge=mock]"
    assert _TOYS.describe("toy_holder") is not None


@pytest.mark.parametrize("registry", [labelers, detectors], ids=lambda r: r.family)
def test_every_nested_model_of_a_judging_component_is_called_judge(registry):
    holders = {}
    for name in registry.names():
        for f in dataclasses.fields(registry.get(name)):
            if f.metadata.get("component") == "backends":
                holders.setdefault(name, []).append(f.name)
    assert holders, "no component holds a backend"
    # The model that judges is 'judge'; a second model is named by its role: the LLM that
    # splits a response into claims for the claim-wise grounding detectors is 'splitter'.
    judges = {name: [f for f in fields if f != "splitter"] for name, fields in holders.items()}
    assert {name: ["judge"] for name in holders} == judges


def test_semantic_entropy_takes_backend_for_its_llm_judge_with_the_message():
    new = _built_silently(detectors, "semantic_entropy[equivalence=llm,judge=mock]")
    with pytest.warns(FutureWarning, match="'backend' is now 'judge'"):
        old = detectors.create_from_key("semantic_entropy[equivalence=llm,backend=mock]")
    assert old.key == new.key
