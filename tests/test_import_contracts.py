"""The private-modules contract of scripts/import_contracts.py on small import graphs."""

import sys
from pathlib import Path

import grimp
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from import_contracts import PrivateModulesContract, owner_of  # noqa: E402


@pytest.mark.parametrize(
    ("module", "owner"),
    [
        ("pkg.a._b", "pkg.a"),
        ("pkg._x", "pkg"),
        ("pkg.a._b.c", "pkg.a"),
        ("pkg.a.b", None),
        ("pkg.__init__", None),
    ],
)
def test_owner_of_a_private_module(module, owner):
    assert owner_of(module) == owner


def _graph(imports):
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.a._impl", "pkg.a.sub", "pkg.a.sub.x", "pkg.b", "pkg.b.y"):
        graph.add_module(module)
    for importer, imported in imports:
        graph.add_import(importer=importer, imported=imported, line_number=7, line_contents="")
    return graph


def _check(imports):
    contract = PrivateModulesContract(
        name="private", session_options={}, contract_options={"root": "pkg"}
    )
    return contract.check(_graph(imports), verbose=False)


def test_imports_of_a_private_module_from_its_own_package_are_kept():
    assert _check([("pkg.a", "pkg.a._impl"), ("pkg.b.y", "pkg.a")]).kept


@pytest.mark.parametrize(
    "importer",
    ["pkg.b.y", "pkg.a.sub.x", "pkg.a.sub", "pkg"],
    ids=["sibling", "child", "sub", "root"],
)
def test_imports_of_a_private_module_from_elsewhere_are_broken(importer):
    check = _check([(importer, "pkg.a._impl")])
    assert not check.kept
    assert check.metadata["broken"] == [
        {"importer": importer, "imported": "pkg.a._impl", "lines": [7]}
    ]
