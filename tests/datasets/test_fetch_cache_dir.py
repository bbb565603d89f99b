"""``datasets fetch`` writes where datasets are read, and cleans up when it fails (issue 25).

The download goes to ``$REALITYCHECK_CACHE_DIR/data`` when that variable is
set (else ``~/.cache/realitycheck/data``), the folder datasets read from; a
fetch that fails removes the folders it created and left empty.
"""

from __future__ import annotations

import functools
import http.server
import socket
import threading
from pathlib import Path

import pytest

from realitycheck.cli import main
from realitycheck.datasets import datasets, fetch
from realitycheck.datasets._sources import URL_ENV, sources_of
from realitycheck.errors import DataNotFoundError


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def caches(tmp_path, monkeypatch):
    """``$REALITYCHECK_CACHE_DIR`` and a home of the test's own, away from the shared data."""
    monkeypatch.setenv("REALITYCHECK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("REALITYCHECK_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cache"


def test_a_failed_fetch_names_the_cache_dir_and_leaves_no_folder(
    caches, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv(URL_ENV, f"http://127.0.0.1:{_closed_port()}")
    assert main(["datasets", "fetch", "ragtruth"]) == 2
    err = capsys.readouterr().err
    assert (
        f"{caches / 'data' / 'ragtruth' / 'qa.jsonl'}: Could not download http://127.0.0.1:" in err
    )
    assert not caches.exists()  # the folders the failed fetch made are gone
    assert not (tmp_path / "home").exists()  # and it never wrote to ~/.cache
    dest = tmp_path / "mine" / "data"
    assert main(["datasets", "fetch", "ragtruth", "--dest", str(dest)]) == 2
    assert not (tmp_path / "mine").exists()


@pytest.fixture
def site(tmp_path):
    """Serve tmp_path/site on 127.0.0.1, laid out as <owner>/<name>/<commit>/<path>."""
    root = tmp_path / "site"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - http.server's signature
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(root))
    )
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def test_fetch_writes_where_the_datasets_read(caches, site, data_dir, capsys, monkeypatch):
    root, url = site
    for source in sources_of("nq_open"):
        served = root / source.repo / source.commit / source.path
        served.parent.mkdir(parents=True)
        served.write_bytes((data_dir / source.local).read_bytes())
    monkeypatch.setenv(URL_ENV, url)
    assert main(["datasets", "fetch", "nq_open"]) == 0
    assert f"nq_open: files verified in {caches / 'data'}" in capsys.readouterr().out
    assert datasets.create("nq_open").root() == caches / "data"


def test_a_fetch_that_fails_after_a_verified_file_keeps_it(caches, site, data_dir, monkeypatch):
    root, url = site
    first = sources_of("ragtruth")[0]
    served = root / first.repo / first.commit / first.path
    served.parent.mkdir(parents=True)
    served.write_bytes((data_dir / first.local).read_bytes())
    monkeypatch.setenv(URL_ENV, url)
    with pytest.raises(DataNotFoundError, match="Could not download .*404"):
        fetch("ragtruth")
    assert sorted(p.name for p in (caches / "data" / "ragtruth").iterdir()) == [
        Path(first.local).name
    ]
