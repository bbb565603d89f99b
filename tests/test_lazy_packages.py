"""Every package's public names resolve, whether bound at import or loaded on first use.

Several packages (``generation``, ``pipeline``, ``metrics``, ``detectors``, ...)
list their heavy names with :func:`realitycheck.registry.lazy_names`, by the
module that defines each: a name listed under the wrong module, or in
``__all__`` but in no map, would fail only when a user first asks for it.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import realitycheck

PACKAGES = sorted(
    info.name
    for info in pkgutil.walk_packages(realitycheck.__path__, "realitycheck.")
    if info.ispkg
)


def test_the_packages_are_found():
    assert {"realitycheck.generation", "realitycheck.pipeline", "realitycheck.metrics"} <= set(
        PACKAGES
    )


@pytest.mark.parametrize("name", PACKAGES)
def test_every_name_in_all_resolves_and_is_listed_by_dir(name):
    package = importlib.import_module(name)
    public = getattr(package, "__all__", ())
    missing = [n for n in public if not hasattr(package, n)]
    assert not missing, f"{name}.__all__ names that do not resolve: {missing}"
    assert set(public) <= set(dir(package))
    assert len(public) == len(set(public)), f"{name}.__all__ lists a name twice"
