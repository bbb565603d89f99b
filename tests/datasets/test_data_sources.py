import csv
import functools
import hashlib
import http.server
import json
import threading
from pathlib import Path

import pytest

from realitycheck.datasets import SOURCES, datasets, fetch, verify
from realitycheck.datasets._sources import URL_ENV, sha256, sources_of
from realitycheck.errors import DataNotFoundError, InvalidInputError


def test_table_matches_the_files(data_dir):
    for source in SOURCES:
        assert sha256(data_dir / source.local) == source.sha256, source.local
    assert verify(data_dir) == []


def test_table_matches_sources_tsv_and_sha256sums(data_dir):
    with (data_dir / "SOURCES.tsv").open(encoding="utf-8", newline="") as fh:
        rows = {r["local_path"]: r for r in csv.DictReader(fh, delimiter="\t")}
    sums = dict(
        reversed(line.split()) for line in (data_dir / "SHA256SUMS").read_text().splitlines()
    )
    assert {s.local for s in SOURCES} == set(rows)
    for source in SOURCES:
        row = rows[source.local]
        assert (source.repo, source.commit, source.path) == (
            row["repo"],
            row["commit"],
            row["source_path"],
        )
        assert len(source.commit) == 40
        assert source.sha256 == sums[source.local]


def test_every_dataset_file_has_a_source():
    for name in datasets.names():
        if datasets.get(name).files:
            assert [s.local for s in sources_of(name)] == list(datasets.get(name).files)


def test_url_pattern():
    source = sources_of("halueval-general")[0]
    assert source.url() == (
        "https://raw.githubusercontent.com/RUCAIBox/HaluEval/"
        "b7253db3cdaa0ab2c382f92b26b390109174f77e/data/general_data.json"
    )


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests: list[str] = []

    def log_message(self, format, *args):  # noqa: A002 - silence the server log
        pass

    def do_GET(self):  # noqa: N802 - http.server's naming
        type(self).requests.append(self.path)
        super().do_GET()


@pytest.fixture
def server(tmp_path):
    """Serve tmp_path/site over HTTP on 127.0.0.1, laid out as <owner>/<name>/<commit>/<path>."""
    site = tmp_path / "site"
    site.mkdir()
    handler = functools.partial(_Handler, directory=str(site))
    _Handler.requests = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield site, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def _publish(site: Path, data_dir: Path, name: str, *, corrupt: bool = False) -> None:
    for source in sources_of(name):
        target = site / source.repo / source.commit / source.path
        target.parent.mkdir(parents=True, exist_ok=True)
        data = (data_dir / source.local).read_bytes()
        target.write_bytes(data + b"tampered" if corrupt else data)


def test_fetch_downloads_and_verifies(server, data_dir, tmp_path):
    site, url = server
    _publish(site, data_dir, "nq-open")
    dest = tmp_path / "cache"
    ticks = []
    assert fetch("nq-open", dest=dest, base_url=url, progress=ticks.append) == dest
    assert ticks == [1]
    assert verify(dest, ["nq-open"]) == []
    assert len(_Handler.requests) == 1
    assert not list((dest / "nq_open").glob(".*"))  # no temporary file left behind
    fetch("nq-open", dest=dest, base_url=url)  # already there with the right checksum
    assert len(_Handler.requests) == 1
    fetch("nq-open", dest=dest, base_url=url, force=True)
    assert len(_Handler.requests) == 2
    bundle = datasets.create("nq-open", data_dir=dest).load()
    assert len(bundle.examples) == 3610


def test_fetch_rejects_a_checksum_mismatch(server, data_dir, tmp_path, monkeypatch):
    site, url = server
    _publish(site, data_dir, "halueval-general", corrupt=True)
    monkeypatch.setenv(URL_ENV, url)
    dest = tmp_path / "cache"
    expected = sources_of("halueval-general")[0].sha256
    got = hashlib.sha256(
        (data_dir / "halueval/general_data.json").read_bytes() + b"tampered"
    ).hexdigest()
    with pytest.raises(
        InvalidInputError,
        match=rf"general_data\.json.*expected sha256 "
        rf"{expected}, got {got}",
    ):
        fetch("halueval-general", dest=dest)
    assert not dest.exists()  # the folders the failed fetch made are gone with the bad file


def test_fetch_replaces_a_bad_local_file(server, data_dir, tmp_path):
    site, url = server
    _publish(site, data_dir, "nq-open")
    dest = tmp_path / "cache"
    (dest / "nq_open").mkdir(parents=True)
    (dest / "nq_open" / "NQ-open.dev.jsonl").write_text("stale")
    assert verify(dest, ["nq-open"])[0].startswith("nq_open/NQ-open.dev.jsonl: sha256 is ")
    fetch("nq-open", dest=dest, base_url=url)
    assert verify(dest, ["nq-open"]) == []


def test_fetch_reports_a_missing_file(server, tmp_path):
    _, url = server
    with pytest.raises(DataNotFoundError, match="Could not download .*404"):
        fetch("nq-open", dest=tmp_path / "cache", base_url=url)


def test_fetch_refuses_what_it_cannot_fetch(tmp_path):
    with pytest.raises(InvalidInputError, match="no files to download"):
        fetch("files", dest=tmp_path)
    with pytest.raises(InvalidInputError, match="http"):
        fetch("nq-open", dest=tmp_path, base_url="file:///etc")


def test_verify_reports_missing_files(tmp_path):
    problems = verify(tmp_path, ["ragtruth"])
    assert problems == [f"ragtruth/{t}.jsonl: missing" for t in ("qa", "summary", "data2txt")]


def test_an_unpinned_file_needs_trust_then_is_checked_against_its_record(server, tmp_path):
    site, url = server
    source = sources_of("halueval_qa")[0]
    assert source.sha256 == ""  # not in the shared data folder: no digest pinned here
    served = site / source.repo / source.commit / source.path
    served.parent.mkdir(parents=True)
    row = {"knowledge": "k", "question": "q?", "right_answer": "a", "hallucinated_answer": "b"}
    served.write_text(json.dumps(row) + "\n")
    dest = tmp_path / "cache"
    with pytest.raises(InvalidInputError, match=r"no pinned SHA-256 .*--trust-unpinned"):
        fetch("halueval_qa", dest=dest, base_url=url)
    assert not (dest / source.local).exists() and _Handler.requests == []
    fetch("halueval_qa", dest=dest, base_url=url, trust_unpinned=True)
    digest = hashlib.sha256(served.read_bytes()).hexdigest()
    assert (dest / f"{source.local}.sha256").read_text().split()[0] == digest
    assert verify(dest, ["halueval_qa"]) == []
    assert len(datasets.create("halueval_qa", data_dir=dest).load().responses) == 2
    served.write_text(json.dumps(row | {"right_answer": "changed"}) + "\n")
    with pytest.raises(InvalidInputError, match=rf"expected sha256 {digest}, got "):
        fetch("halueval_qa", dest=dest, base_url=url, force=True)  # checked against the record
    assert verify(dest, ["halueval_qa"]) == []  # the recorded file was kept


def test_fetching_an_unpinned_file_on_the_command_line_says_how(tmp_path, capsys, monkeypatch):
    from realitycheck.cli import main

    monkeypatch.setenv(URL_ENV, "http://127.0.0.1:9")
    code = main(["datasets", "fetch", "halueval_dialogue", "--dest", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "--trust-unpinned" in err and "Traceback" not in err
