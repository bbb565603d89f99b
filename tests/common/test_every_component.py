"""Checks every registered component of every family: documented, exported, rebuilt, described.

Families: datasets, backends, labelers, detectors, studies. The checks that
need a family's verb (a backend's capabilities, a study's run) are below the
shared ones; labelers and detectors have their own in ``test_components.py``.
"""

from __future__ import annotations

import dataclasses
import importlib
import json

import pytest
from _component_fixtures import FAMILIES, minimal

import realitycheck
from realitycheck.backends import CAPABILITIES
from realitycheck.registry import Component, registry_of
from realitycheck.store import StudyResult

EVERY = [(family, name) for family in FAMILIES for name in registry_of(family).names()]
IDS = [f"{family}:{name}" for family, name in EVERY]


def _build(family: str, name: str) -> Component:
    return registry_of(family).create(name, **minimal(family, name))


def test_every_family_has_components_and_snake_case_names():
    for family in FAMILIES:
        names = registry_of(family).names()
        assert names, family
        for name in names:
            assert name == name.lower() and "-" not in name and " " not in name, name


@pytest.mark.parametrize(("family", "name"), EVERY, ids=IDS)
def test_documented_every_parameter_included(family, name):
    cls = registry_of(family).get(name)
    doc = registry_of(family).describe(name)
    assert doc.summary and doc.summary.endswith("."), f"{name}: no one-line summary"
    undocumented = [p.name for p in doc.params if not p.doc]
    assert not undocumented, f"{name} does not document {undocumented} (Args: or Attributes:)"
    assert (cls.__doc__ or "").strip()


@pytest.mark.parametrize(("family", "name"), EVERY, ids=IDS)
def test_exported_from_its_module_and_reachable_by_its_dotted_path(family, name):
    cls = registry_of(family).get(name)
    module = importlib.import_module(cls.__module__)
    assert cls.__name__ in module.__all__, f"{cls.__module__} does not export {cls.__name__}"
    # The dotted path works although `realitycheck.<family>` is the registry.
    submodule = cls.__module__.rsplit(".", 1)[1]
    assert getattr(getattr(getattr(realitycheck, family), submodule), cls.__name__) is cls


@pytest.mark.parametrize(("family", "name"), EVERY, ids=IDS)
def test_spec_and_key_round_trip(family, name):
    registry = registry_of(family)
    component = _build(family, name)
    spec = json.loads(component.spec_json)
    assert spec["name"] == name and spec["version"] == component.version
    assert registry.create_from_spec(spec) == component
    assert registry.create_from_spec(component.spec).spec_json == component.spec_json
    if type(component).key is Component.key:  # human and recorded write their own keys
        again = registry.create_from_key(component.key)
        assert again == component and again.key == component.key
    # The hyphenated spelling is an alias of the same component.
    assert registry.get(name.replace("_", "-")) is type(component)


@pytest.mark.parametrize(("family", "name"), EVERY, ids=IDS)
def test_describe_works_without_building(family, name):
    doc = registry_of(family).describe(name)
    cls = registry_of(family).get(name)
    fields = [f.name for f in dataclasses.fields(cls) if f.init]
    assert [p.name for p in doc.params] == fields
    assert doc.name == name and doc.family == family
    required = {p.name for p in doc.params if p.required}
    assert required <= set(minimal(family, name)), f"{name} needs {required}: add to MINIMAL"
    text = doc.to_text()
    assert text.startswith(f"{name} (") and all(f"  {f}:" in text for f in fields)
    json.dumps(doc.to_dict())


@pytest.mark.parametrize("name", registry_of("backends").names())
def test_backend_capabilities_are_known_and_it_builds_without_loading_a_model(name):
    backend = _build("backends", name)
    assert backend.capabilities, f"{name} declares no capability"
    assert backend.capabilities <= CAPABILITIES, backend.capabilities - CAPABILITIES
    assert {"chat", "completion"} & backend.capabilities, "a backend takes chat or prompts"


@pytest.mark.parametrize("name", registry_of("datasets").names())
def test_dataset_builds_with_defaults_or_documents_what_it_needs(name):
    dataset = _build("datasets", name)
    assert dataset.description, f"{name} has no one-line description for `datasets list`"
    assert dataset.key == name if not minimal("datasets", name) else dataset.key.startswith(name)


@pytest.mark.parametrize("name", registry_of("studies").names())
def test_study_runs_on_a_tiny_run(name, tiny_run):
    study = _build("studies", name)
    result = study.run(tiny_run)
    assert isinstance(result, StudyResult)
    assert result.study == study.key and result.spec == study.spec
    assert result.finding.strip(), f"{name} states no finding"
    assert result.tables or result.skipped, f"{name} returned nothing and said not why"
    for table in result.tables:
        assert table.name and "/" not in table.name
    for figure in result.figures:
        assert figure.png.startswith(b"\x89PNG")
