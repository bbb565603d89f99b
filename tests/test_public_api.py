import ast
import importlib
import inspect
import re
import subprocess
import sys
from types import ModuleType

import pytest

import realitycheck
import realitycheck.errors
import realitycheck.metrics


def test_all_is_sorted_and_every_name_exists():
    for module in (realitycheck, realitycheck.metrics):
        assert list(module.__all__) == sorted(module.__all__)
        for name in module.__all__:
            assert hasattr(module, name), name


def _imported_names(tree: ast.Module) -> set[tuple[str, str]]:
    """(module, name) of the package's own top-level and TYPE_CHECKING imports."""
    found = set()
    for node in tree.body:
        body = node.body if isinstance(node, ast.If) else [node]
        for inner in body:
            if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith(
                "realitycheck"
            ):
                found |= {(inner.module, alias.name) for alias in inner.names}
    return found


def test_the_public_surface_is_one_table_that_all_dir_and_the_imports_agree_with():
    table = {
        (f"realitycheck.{home}", n) for home, names in realitycheck._PUBLIC.items() for n in names
    }
    assert len(table) == sum(len(names) for names in realitycheck._PUBLIC.values())  # no repeats
    # The eager registry imports and the TYPE_CHECKING block name exactly the table's names.
    tree = ast.parse(inspect.getsource(realitycheck))
    assert _imported_names(tree) == table
    names = {n for _, n in table}
    assert realitycheck.__all__ == sorted([*names, "__version__"])
    assert set(realitycheck._WHERE) == names
    helpers = {"Any", "TYPE_CHECKING", "annotations"}
    shown = {
        n
        for n in dir(realitycheck)
        if not n.startswith("_") and not isinstance(getattr(realitycheck, n), ModuleType)
    }
    assert shown - helpers == names


def test_every_public_name_resolves_to_the_object_of_its_home_module():
    for name, home in realitycheck._WHERE.items():
        module = importlib.import_module(f"realitycheck.{home}")
        assert getattr(realitycheck, name) is getattr(module, name), name


def test_a_name_outside_the_table_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Needz'"):
        realitycheck.Needz  # noqa: B018


def test_public_names_load_on_first_use():
    code = (
        "import realitycheck as rc; before = 'RunStore' in vars(rc); rc.RunStore;"
        "print(before, 'RunStore' in vars(rc))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_every_documented_exception_is_exported():
    drawn = set(re.findall(r"\b([A-Z]\w*Error)\b", realitycheck.errors.__doc__ or ""))
    defined = {
        n
        for n in realitycheck.errors.__all__
        if isinstance(getattr(realitycheck.errors, n), type)
        and issubclass(getattr(realitycheck.errors, n), realitycheck.errors.RealityCheckError)
    }
    assert drawn == defined
    assert defined <= set(realitycheck.__all__)
    assert {"RunFolderError", "MissingFeatureError"} <= set(realitycheck.__all__)


def test_import_does_not_pull_torch_or_backends():
    code = (
        "import sys, realitycheck; realitycheck.labelers.names(); realitycheck.detectors.names();"
        "bad=[m for m in ('torch','transformers','sentence_transformers') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_import_and_the_cli_do_not_pull_scipy_stats():
    # scipy.stats takes over half a second to import; every use imports it lazily.
    code = (
        "import sys, realitycheck, realitycheck.cli, realitycheck.pipeline;"
        "print(','.join(m for m in ('scipy.stats', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_did_you_mean_names_the_closest_choice_or_nothing():
    from realitycheck.errors import did_you_mean

    assert did_you_mean("humn", ["human", "recorded:x"]) == " Did you mean 'human'?"
    assert did_you_mean("zzzz", ["human"]) == ""
    assert did_you_mean("lenght", iter(["length"])) == " Did you mean 'length'?"


def test_needs_is_a_deprecated_alias_of_run_context_for_one_release():
    from realitycheck.detectors import RunContext

    with pytest.warns(DeprecationWarning, match=r"realitycheck\.Needs is renamed .*RunContext"):
        assert realitycheck.Needs is RunContext
    with pytest.warns(DeprecationWarning, match=r"detectors\.Needs is renamed RunContext"):
        from realitycheck.detectors import Needs
    assert Needs is RunContext
    assert "Needs" not in realitycheck.__all__ and "Needs" not in dir(realitycheck)
    assert "RunContext" in realitycheck.__all__
