"""A registry asked for one name imports the one module that declares it; the rest stay unread."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap

import pytest

import realitycheck as rc
from realitycheck.registry import Registry
from realitycheck.registry._discover import declared_names

FAMILIES = ("datasets", "labelers", "detectors", "backends", "retrievers", "studies")


def _fresh(code: str) -> list[str]:
    """The modules a fresh interpreter has imported after running ``code``."""
    tail = "print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", f"import json, sys\nimport realitycheck as rc\n{code}\n{tail}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _public(modules: list[str], family: str) -> list[str]:
    prefix = f"realitycheck.{family}."
    return [m for m in modules if m.startswith(prefix) and not m[len(prefix) :].startswith("_")]


@pytest.mark.parametrize(
    ("family", "name", "module"),
    [
        ("detectors", "length", "realitycheck.detectors.length"),
        ("labelers", "rouge_l", "realitycheck.labelers.rouge"),
        ("datasets", "nq-open", "realitycheck.datasets.nq_open"),  # the hyphenated alias
    ],
)
def test_one_name_imports_only_the_module_that_declares_it(family, name, module):
    got = _fresh(f"print(rc.{family}.get({name!r}).name)")
    assert _public(got, family) == [module]
    assert "importlib.metadata" not in got  # no plugin scan either


def test_every_name_lists_the_whole_family():
    got = _fresh("rc.detectors.get('length'); rc.detectors.names()")
    assert len(_public(got, "detectors")) > 10


@pytest.mark.parametrize("family", FAMILIES)
def test_the_declared_names_are_the_registered_ones_and_lead_to_their_modules(family):
    registry = getattr(rc, family)
    package = importlib.import_module(registry._builtin_module)
    declared = declared_names(package.__name__, package.__path__, registry.kind)
    names = registry.names()  # the full import: the reference
    assert sorted(declared) == names
    for name, module in declared.items():
        assert registry.get(name).__module__.startswith(module), name


def test_a_wrong_or_missing_declaration_falls_back_to_importing_everything(tmp_path, monkeypatch):
    package = tmp_path / "rc_widgets"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from realitycheck.registry import Registry\n"
        "widgets = Registry('widgets', 'rc_widgets')\n"
        "widget = widgets.register\n"
    )
    body = textwrap.dedent(
        """
        from dataclasses import dataclass
        from realitycheck.registry import Component
        from rc_widgets import widget

        NAME = {name!r}

        @widget(NAME)
        @dataclass(frozen=True, kw_only=True)
        class W(Component):
            '''A widget.'''
        """
    )
    # "ghost" is declared in the text of a docstring only; "real" through a variable.
    (package / "docs.py").write_text('"""Example:\n\n@widget("ghost")\n"""\n')
    (package / "ghost.py").write_text(body.format(name="ghost"))
    (package / "real.py").write_text(body.format(name="real"))
    monkeypatch.syspath_prepend(str(tmp_path))
    widgets = importlib.import_module("rc_widgets").widgets
    assert isinstance(widgets, Registry)
    assert widgets.get("ghost").name == "ghost"
    assert {"rc_widgets.docs", "rc_widgets.ghost", "rc_widgets.real"} <= set(sys.modules)
    assert widgets.names() == ["ghost", "real"]
    for name in ("rc_widgets", "rc_widgets.docs", "rc_widgets.ghost", "rc_widgets.real"):
        monkeypatch.delitem(sys.modules, name)
