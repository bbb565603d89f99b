"""The one atomic write: a file or folder appears whole under its name, or not at all."""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import pytest

import realitycheck
from realitycheck.store import atomic_file, atomic_folder, write_atomically

SRC = Path(realitycheck.__file__).parent


class Boom(Exception):
    """A failure in the middle of a write."""


@pytest.fixture
def fsyncs(monkeypatch):
    """Record each :func:`os.fsync` as ``"file"`` or ``"folder"``."""
    seen: list[str] = []
    real = os.fsync

    def fsync(fd):
        seen.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize(
    ("data", "expected"),
    [(b"\x00new\xff", b"\x00new\xff"), ("héllo\n", "héllo\n".encode())],
)
def test_write_atomically_replaces_the_file_with_the_new_content(tmp_path, data, expected):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    write_atomically(path, data)
    assert path.read_bytes() == expected
    assert _names(tmp_path) == ["f.bin"]


def test_write_atomically_encodes_text_with_the_encoding_given(tmp_path):
    write_atomically(tmp_path / "f.txt", "é", encoding="latin-1")
    assert (tmp_path / "f.txt").read_bytes() == b"\xe9"


@pytest.mark.skipif(os.name != "posix", reason="POSIX folders are fsync-ed")
def test_write_atomically_syncs_the_file_before_its_rename_and_the_folder_after(
    tmp_path, fsyncs, monkeypatch
):
    real = os.replace

    def replace(src, dst):
        fsyncs.append("replace")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    write_atomically(tmp_path / "f.txt", "x")
    assert fsyncs == ["file", "replace", "folder"]


@pytest.mark.parametrize("fails_at", ["write", "fsync", "replace"])
@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_a_write_that_fails_anywhere_leaves_the_old_file_and_no_temporary_file(
    tmp_path, monkeypatch, fails_at, error
):
    path = tmp_path / "manifest.json"
    path.write_bytes(b"old")

    def fail(*args, **kwargs):
        raise error

    if fails_at == "write":  # half written, then the disk fills up
        real_fdopen = os.fdopen

        class HalfFile:
            def __init__(self, fd, *args, **kwargs):
                self.fh = real_fdopen(fd, *args, **kwargs)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.fh.close()

            def write(self, data):
                self.fh.write(data[:3])
                self.fh.flush()
                raise error

        monkeypatch.setattr(os, "fdopen", HalfFile)
    else:
        monkeypatch.setattr(os, fails_at, fail)
    with pytest.raises(type(error)):
        write_atomically(path, b"new")
    monkeypatch.undo()
    assert path.read_bytes() == b"old"
    assert _names(tmp_path) == ["manifest.json"]


def test_a_failed_first_write_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("no")))
    with pytest.raises(OSError, match="no"):
        write_atomically(tmp_path / "new.txt", "x")
    assert _names(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_a_new_file_gets_the_mode_of_an_ordinary_open_not_a_private_one(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomically(tmp_path / "a", b"x")
        with atomic_file(tmp_path / "b") as tmp:
            tmp.write_bytes(b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "b").stat().st_mode) == 0o644


def test_atomic_file_gives_a_path_beside_the_target_and_replaces_it_on_success(tmp_path, fsyncs):
    path = tmp_path / "t.parquet"
    path.write_bytes(b"old")
    with atomic_file(path) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".t.parquet.")
        assert tmp.name.endswith(".tmp") and tmp.exists()
        assert path.read_bytes() == b"old"  # nothing visible before the block ends
        tmp.write_bytes(b"new")
    assert path.read_bytes() == b"new"
    assert _names(tmp_path) == ["t.parquet"]
    assert fsyncs[0] == "file" and fsyncs.count("file") == 1
    assert fsyncs[1:] == (["folder"] if os.name == "posix" else [])


@pytest.mark.parametrize("error", [Boom("writer failed"), KeyboardInterrupt()])
def test_atomic_file_whose_writer_fails_halfway_leaves_the_old_file_and_no_temporary(
    tmp_path, error
):
    path = tmp_path / "t.parquet"
    path.write_bytes(b"old")
    with pytest.raises(type(error)), atomic_file(path) as tmp:
        tmp.write_bytes(b"half")
        raise error
    assert path.read_bytes() == b"old"
    assert _names(tmp_path) == ["t.parquet"]


def test_atomic_file_takes_a_path_writer_such_as_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"a": [1, 2, 3]})
    with atomic_file(tmp_path / "t.parquet") as tmp:
        pq.write_table(table, tmp)
    assert pq.read_table(tmp_path / "t.parquet").equals(table)


def test_atomic_folder_replaces_an_older_folder_whole(tmp_path, fsyncs):
    target = tmp_path / "index"
    target.mkdir()
    (target / "stale.bin").write_bytes(b"old")
    with atomic_folder(target) as staging:
        assert staging.parent == tmp_path and staging.is_dir()
        assert not list(staging.iterdir())
        (staging / "sub").mkdir()
        (staging / "sub" / "a.bin").write_bytes(b"a")
        (staging / "b.json").write_text("{}")
        assert (target / "stale.bin").exists()  # the old folder until the block ends
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*")) == [
        "b.json",
        "sub",
        "sub/a.bin",
    ]
    assert _names(tmp_path) == ["index"]  # no staging folder, no old folder
    assert fsyncs.count("file") == 2


@pytest.mark.parametrize("exists", [True, False])
def test_atomic_folder_whose_writer_fails_leaves_the_old_folder_and_no_staging(tmp_path, exists):
    target = tmp_path / "index"
    if exists:
        target.mkdir()
        (target / "old.bin").write_bytes(b"old")
    with pytest.raises(Boom), atomic_folder(target) as staging:
        (staging / "half.bin").write_bytes(b"half")
        raise Boom
    assert _names(tmp_path) == (["index"] if exists else [])
    if exists:
        assert _names(target) == ["old.bin"]


def test_atomic_folder_puts_the_old_folder_back_when_the_rename_fails(tmp_path, monkeypatch):
    target = tmp_path / "index"
    target.mkdir()
    (target / "old.bin").write_bytes(b"old")
    real = os.replace

    def replace(src, dst):
        if Path(src).name.endswith(".tmp"):  # the new folder's rename
            raise OSError("busy")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="busy"), atomic_folder(target) as staging:
        (staging / "new.bin").write_bytes(b"new")
    assert _names(tmp_path) == ["index"]
    assert _names(target) == ["old.bin"]


# -- every site uses it ---------------------------------------------------------------------

_RENAMES = {("os", "replace"), ("os", "rename"), ("os", "renames"), ("shutil", "move")}
_TEMP_FILES = {("tempfile", "mkstemp"), ("tempfile", "NamedTemporaryFile")}


def _direct_writes(path: Path) -> list[str]:
    """Calls in ``path`` that rename files or make temporary files by hand."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module in ("os", "shutil", "tempfile"):
            names = {(node.module, a.name) for a in node.names}
            found += [f"{node.lineno}: from {m} import {n}" for m, n in names & _RENAMES]
            found += [f"{node.lineno}: from {m} import {n}" for m, n in names & _TEMP_FILES]
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        func = node.func
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        if (owner, func.attr) in _RENAMES | _TEMP_FILES:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif func.attr in ("rename", "replace") and len(node.args) == 1 and not node.keywords:
            # Path.rename(target) / Path.replace(target); str.replace takes two arguments,
            # dataclasses.replace and DataFrame.rename keywords
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_check_finds_a_hand_made_atomic_write(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "import os, tempfile\nfrom os import replace\n"
        "fd, tmp = tempfile.mkstemp()\nos.replace(tmp, 'x')\nPath(tmp).rename(target)\n"
        "'a'.replace('b', 'c')\ndataclasses.replace(x, y=1)\ndf.rename(columns={})\n"
    )
    assert [line.split(":")[0] for line in _direct_writes(module)] == ["2", "3", "4", "5"]


def test_no_module_outside_the_store_renames_files_or_makes_temporary_files_by_hand():
    """Every atomic write goes through realitycheck.store (write_atomically, atomic_file/folder)."""
    offenders = {
        str(path.relative_to(SRC)): found
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "store" and (found := _direct_writes(path))
    }
    assert offenders == {}
