"""No secret reaches the run folder or the terminal, even when a server echoes the key."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow.parquet as pq
import pytest

from realitycheck.cli import main
from realitycheck.records import Label
from realitycheck.store import REDACTED, RunStore, register_secret_env, scrub, scrub_text

KEY = "Zk3v9QpL2xR7tYb1Wm4nHs8dC6fG0jK5"


@pytest.mark.parametrize(
    "text",
    [
        "Incorrect API key provided: sk-proj-abcDEF123456789xyzUVW.",
        "Incorrect API key provided: sk-abc***********************wxyz",
        "header Authorization: Bearer eyJhbGciOi.J9abc-def",
        "aws AKIAIOSFODNN7EXAMPLE in the log",
        "hf_abcdefghijklmnopqrstuvwxyz was rejected",
        "GET /v1?token=aB3dE5fG7hJ9kL1mN3pQ&x=1",
        '{"api_key": "aB3dE5fG7hJ9kL1mN3pQ"}',
        "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    ],
)
def test_key_shapes_are_scrubbed(text):
    out = scrub_text(text)
    assert REDACTED in out
    for secret in (
        "abcDEF123456789",
        "J9abc-def",
        "AKIAIOSFODNN7",
        "mN3pQ",
        "klmnopqrs",
        "0123456789",
    ):
        assert secret not in out


@pytest.mark.parametrize(
    "text",
    [
        "length[unit=tokens] and token_f1",
        "cache_key=0123456789abcdef0123456789abcdef",
        "The answer is Paris; the key point is the river.",
        "password: hunter2",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert scrub_text(text) == text


def test_configured_keys_and_their_pieces(monkeypatch):
    monkeypatch.setenv("RC_TEST_LLM_VAR", KEY)
    assert scrub_text(f"bad key {KEY}!") == f"bad key {KEY}!"  # the name is not secret-like
    register_secret_env("RC_TEST_LLM_VAR")
    assert scrub_text(f"bad key {KEY}!") == f"bad key {REDACTED}!"
    assert KEY[:10] not in scrub_text(f"starts {KEY[:10]}, ends {KEY[-10:]}")
    assert KEY[-10:] not in scrub_text(f"starts {KEY[:10]}, ends {KEY[-10:]}")
    nested = scrub({"notes": [f"saw {KEY}"], f"k{KEY}": ("x",)})
    assert KEY not in json.dumps(nested)


def test_a_long_configured_key_is_caught_whole_and_by_its_start_or_end(monkeypatch):
    # An OpenAI project key is 164 characters; before, a key over 64 was not caught at all.
    long_key = "Zq" + "".join(f"{i:03d}xY" for i in range(32)) + "Wv"
    assert len(long_key) > 64
    monkeypatch.setenv("RC_LONG_TOKEN", long_key)
    for shown in (long_key, long_key[:12], long_key[-9:]):
        out = scrub_text(f"the server said [{shown}]")
        assert out == f"the server said [{REDACTED}]", shown
    assert scrub_text(f"[{long_key[20:40]}]") == f"[{long_key[20:40]}]"  # a middle run only


def test_records_and_manifest_are_scrubbed_on_write(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", KEY)
    store = RunStore(tmp_path)
    store.append(
        [Label(response_id="r", labeler="j", hallucinated=None, raw=f"echo {KEY}", error=KEY)]
    )
    store.update_manifest(notes=[f"the server said {KEY}"], config={"url": f"x?key={KEY}"})
    raw = (tmp_path / "manifest.json").read_text()
    assert KEY not in raw and REDACTED in raw
    label = store.frame("labels").iloc[0]
    assert (label["raw"], label["error"]) == (f"echo {REDACTED}", REDACTED)


class _Echo(BaseHTTPRequestHandler):
    """Answers 401 and repeats the key it was sent, as some servers do."""

    def do_POST(self) -> None:  # noqa: N802 (the http.server protocol)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        auth = self.headers.get("authorization", "")
        self.server.seen.append(auth)  # type: ignore[attr-defined]
        body = json.dumps(
            {"error": {"message": f"Incorrect API key provided: {auth.split()[-1]} ({auth})"}}
        ).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def echo_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_an_echoing_server_leaks_nothing(tmp_path, monkeypatch, capsys, echo_server):
    monkeypatch.setenv("RC_ECHO_VAR", KEY)  # a name nothing would guess is a secret
    data = tmp_path / "q.jsonl"
    data.write_text('{"question": "Capital of France?", "text": "-"}\n')
    port = echo_server.server_address[1]
    backend = (
        f"openai[model=m,base_url=http://127.0.0.1:{port}/v1,api_key_env=RC_ECHO_VAR,max_retries=0]"
    )
    run = tmp_path / "run"
    args = ["generate", "-d", f"files[path={data}]", "-b", backend, "--plan", "greedy"]
    code = main([*args, "--out", str(run), "--no-cache"])
    captured = capsys.readouterr()
    assert echo_server.seen and KEY in echo_server.seen[0]  # the key was sent and echoed
    assert code == 3, captured.err  # the generation failed (HTTP 401): exit 3
    assert "failed" in captured.err and "commonest error (1 times" in captured.err
    assert KEY not in captured.out + captured.err
    for piece in (KEY[:8], KEY[-8:]):
        assert piece not in captured.err
    files = [p for p in run.rglob("*") if p.is_file()]
    assert any(p.name == "generation_errors.parquet" for p in files)
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        if path.suffix == ".parquet":
            text = json.dumps(pq.read_table(path).to_pylist(), default=str)
        assert KEY not in text and KEY[:8] not in text, path
    errors = pq.read_table(run / "generation_errors.parquet").to_pylist()
    assert REDACTED in errors[0]["error"]


def test_api_key_env_in_a_run_config_is_learnt_from_the_manifest(tmp_path, monkeypatch):
    monkeypatch.setenv("RC_CONFIG_VAR", "Qw8rT5yU2iO9pA4sD7fGh")
    assert scrub_text("x Qw8rT5yU2iO9pA4sD7fGh") == "x Qw8rT5yU2iO9pA4sD7fGh"
    backend = {"name": "openai", "params": {"api_key_env": "RC_CONFIG_VAR"}}
    RunStore(tmp_path).update_manifest(config={"run_config": {"backend": backend}})
    assert scrub_text("x Qw8rT5yU2iO9pA4sD7fGh") == f"x {REDACTED}"
