"""manifest.json is synced to disk, then replaced atomically by a rename."""

from __future__ import annotations

import json
import os

import pytest

from realitycheck.store import RunStore


def test_a_manifest_write_syncs_the_new_bytes_before_its_rename(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.fstat(fd).st_size))
        real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", os.path.basename(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    store = RunStore(tmp_path)
    store.update_manifest(config={"a": 1})
    store.update_manifest(config={"b": 2})
    assert json.loads((tmp_path / "manifest.json").read_text())["config"] == {"a": 1, "b": 2}
    manifest = [i for i, e in enumerate(events) if e == ("replace", "manifest.json")]
    assert manifest, events
    for i in manifest:  # each rename of the manifest follows an fsync of a non-empty file
        assert events[i - 1][0] == "fsync" and events[i - 1][1] > 0, events


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
