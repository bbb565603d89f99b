"""The package versions in manifest.json: those importlib.metadata gives, read without it."""

from __future__ import annotations

import importlib.metadata
import platform
import sys

from realitycheck.store import _manifest
from realitycheck.store._manifest import package_versions


def _reference(names):
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def test_the_installed_versions_are_those_of_importlib_metadata():
    assert package_versions() == _reference(_manifest._PACKAGES)


def _dist(folder, entry, text, *, as_file=False):
    folder.mkdir(exist_ok=True)
    if as_file:
        (folder / entry).write_text(text)
        return
    (folder / entry).mkdir()
    inner = "METADATA" if entry.endswith(".dist-info") else "PKG-INFO"
    (folder / entry / inner).write_text(text)


def test_dist_info_egg_info_and_the_first_folder_on_the_path_win_as_in_importlib(
    tmp_path, monkeypatch
):
    first, second = tmp_path / "first", tmp_path / "second"
    head = "Metadata-Version: 2.1\nName: {}\nVersion: {}\nSummary: x\n\nVersion: 0.0 in the body\n"
    _dist(first, "Rc_Alpha.Pkg-1.2.3.dist-info", head.format("Rc_Alpha.Pkg", "1.2.3"))
    _dist(second, "rc_alpha_pkg-9.9.dist-info", head.format("rc-alpha-pkg", "9.9"))
    _dist(second, "rc_beta.egg-info", head.format("rc-beta", "2.0.post1"))
    _dist(second, "rc_gamma-3.0-py3.11.egg-info", head.format("rc-gamma", "3.0"), as_file=True)
    _dist(second, "rc_torchlike-2.1.0+cpu.dist-info", head.format("rc-torchlike", "2.1.0+cpu"))
    names = ("rc-alpha.pkg", "rc-beta", "rc-gamma", "rc-torchlike", "rc-absent")
    monkeypatch.setattr(sys, "path", [str(first), str(second)])
    monkeypatch.setattr(_manifest, "_PACKAGES", names)
    got = dict(_manifest._versions.__wrapped__())
    assert got == _reference(names)
    assert got["rc-alpha.pkg"] == "1.2.3" and "rc-absent" not in got


def test_a_metadata_file_without_a_version_line_is_left_to_importlib(tmp_path, monkeypatch):
    _dist(tmp_path, "rc_odd-1.0.dist-info", "Metadata-Version: 2.1\nName: rc-odd\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(_manifest, "_PACKAGES", ("rc-odd",))
    calls = []
    monkeypatch.setattr(_manifest, "_installed_version", lambda name: calls.append(name) or "7")
    assert dict(_manifest._versions.__wrapped__()) == {
        "python": platform.python_version(),
        "rc-odd": "7",
    }
    assert calls == ["rc-odd"]
