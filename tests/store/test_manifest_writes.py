"""manifest.json is replaced atomically by a rename, without an fsync per write."""

from __future__ import annotations

import json
import os

import pytest

from realitycheck.store import RunStore


def test_a_manifest_write_makes_no_fsync(tmp_path, monkeypatch):
    def no_fsync(fd):
        raise AssertionError("fsync called")

    monkeypatch.setattr(os, "fsync", no_fsync)
    store = RunStore(tmp_path)
    store.update_manifest(config={"a": 1})
    store.update_manifest(config={"b": 2})
    assert json.loads((tmp_path / "manifest.json").read_text())["config"] == {"a": 1, "b": 2}


def test_a_write_killed_before_its_rename_leaves_the_previous_manifest_whole(tmp_path, monkeypatch):
    store = RunStore(tmp_path)
    store.update_manifest(config={"a": 1})
    before = (tmp_path / "manifest.json").read_bytes()

    def killed(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        store.update_manifest(config={"b": 2})
    monkeypatch.undo()
    assert (tmp_path / "manifest.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]
