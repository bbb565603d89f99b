r"""The annotation round trip against a real Label Studio, for a maintainer (not run in CI).

It builds a small run from ``tests/annotation/fixtures/answers.jsonl``
(labelled by exact_match and rouge_l), exports the responses on which they
disagree (``annotate export``), starts Label Studio on 127.0.0.1 with a data
folder of its own, creates a project from the exported labeling configuration
through the REST API (Label Studio validates it), imports the exported tasks,
annotates every task as two users (the admin, and a second user created
through the API, named in ``completed_by``), with one disagreement, one
"Can't tell", one note and one skipped task, exports the project as JSON
(``GET /api/projects/<id>/export?exportType=JSON``) and imports that file
with ``annotate import``. With ``--fixtures`` the export, and the tasks,
configuration and manifest it came from, are copied into
``tests/annotation/fixtures/`` (they hold the two users' made-up e-mail
addresses, no token).

Usage, with Label Studio in a virtual environment of its own::

    python3 -m venv /tmp/ls-venv && /tmp/ls-venv/bin/pip install label-studio
    .venv/bin/python scripts/label_studio_roundtrip.py \\
        --label-studio /tmp/ls-venv/bin/label-studio [--fixtures]
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "annotation" / "fixtures"
DATASET = (
    f"files[path={FIXTURES / 'answers.jsonl'},text=answer,columns=example_id:qid+model:llm,"
    "name=quiz]"
)
EXPORT_ARGS = ["-l", "exact_match,rouge_l", "--n", "6", "--annotators", "2", "--seed", "0"]
ADMIN = "admin@example.com"
SECOND = "second.annotator@example.com"


def realitycheck(*args: str) -> str:
    """Run the realitycheck CLI of this interpreter; return its output (fail loudly)."""
    code = "import sys; from realitycheck.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, "-q", *args], capture_output=True, text=True, check=False
    )
    print(f"$ realitycheck {' '.join(args)}\n{done.stdout}{done.stderr}", flush=True)
    if done.returncode != 0:
        raise SystemExit(f"realitycheck exited with {done.returncode}")
    return done.stdout


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Api:
    """Label Studio's REST API with a legacy token (``Authorization: Token …``)."""

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """Send ``body`` as JSON; return the parsed reply (None when empty)."""
        text = self.raw(method, path, body).decode("utf-8")
        return json.loads(text) if text else None

    def raw(self, method: str, path: str, body: Any = None) -> bytes:
        """Send ``body`` as JSON; return the reply's bytes (exit with its text on an error)."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Token {self.token}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:2000]
            raise SystemExit(f"{method} {path} -> {exc.code}: {detail}") from None


def wait_until_up(base: str, server: subprocess.Popen[bytes], seconds: float = 300) -> None:
    """Wait until Label Studio answers ``/health`` (its first start migrates its database)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if server.poll() is not None:
            raise SystemExit(f"label-studio exited with {server.returncode}")
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(2)
    raise SystemExit(f"label-studio did not answer at {base} within {seconds:.0f} s")


def choice(verdict: str, note: str = "") -> list[dict[str, Any]]:
    """An annotation's result: the verdict choice, and the note if any."""
    out: list[dict[str, Any]] = [
        {
            "from_name": "verdict",
            "to_name": "response",
            "type": "choices",
            "value": {"choices": [verdict]},
        }
    ]
    if note:
        out.append(
            {
                "from_name": "note",
                "to_name": "response",
                "type": "textarea",
                "value": {"text": [note]},
            }
        )
    return out


def annotate(api: Api, project: int, second_id: int) -> None:
    """Two annotators on every task; one disagreement, one Can't tell, a note, a skip."""
    tasks = api.call("GET", f"/api/tasks?project={project}&page_size=100")
    tasks = tasks["tasks"] if isinstance(tasks, dict) else tasks
    for k, task in enumerate(sorted(tasks, key=lambda t: t["id"])):
        first = "Hallucinated" if k % 2 else "Faithful"
        second = {0: "Hallucinated", 1: first, 2: "Can't tell"}.get(k, first)
        note = "reference says otherwise" if k == 1 else ""
        api.call("POST", f"/api/tasks/{task['id']}/annotations/", {"result": choice(first, note)})
        body: dict[str, Any] = {"result": choice(second), "completed_by": second_id}
        if k == 3:
            body = {"result": [], "was_cancelled": True, "completed_by": second_id}
        api.call("POST", f"/api/tasks/{task['id']}/annotations/", body)


def main() -> None:
    """Run the round trip (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label-studio", default="label-studio", help="The label-studio command.")
    parser.add_argument(
        "--workdir", help="Folder for the run and Label Studio's data (default: a temp one)."
    )
    parser.add_argument(
        "--fixtures", action="store_true", help="Copy the files into the tests' fixtures."
    )
    args = parser.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="ls-roundtrip-"))
    run, out = work / "run", work / "out"
    realitycheck("label", "-d", DATASET, "-l", "exact_match,rouge_l", "--out", str(run))
    realitycheck("annotate", "export", "--run", str(run), "--export-dir", str(out), *EXPORT_ARGS)
    # `label-studio --version` asks PyPI for the latest release and can hang offline.
    python = Path(shutil.which(args.label_studio) or args.label_studio).parent / "python"
    version = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('label-studio'))"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    print(f"label-studio {version}", flush=True)
    port, token, password = free_port(), secrets.token_hex(20), secrets.token_urlsafe(16)
    base = f"http://127.0.0.1:{port}"
    command = [
        args.label_studio, "start", "--no-browser", "--data-dir", str(work / "ls-data"),
        "--internal-host", "127.0.0.1", "--port", str(port), "--username", ADMIN,
        "--password", password, "--user-token", token, "--enable-legacy-api-token",
    ]  # fmt: skip
    print("$ " + " ".join(c if c not in (token, password) else "<secret>" for c in command))
    log = (work / "label-studio.log").open("wb")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until_up(base, server)
        api = Api(base, token)
        config = (out / "label_config.xml").read_text(encoding="utf-8")
        project = api.call(
            "POST",
            "/api/projects",
            {"title": "realitycheck round trip", "label_config": config, "maximum_annotations": 2},
        )["id"]
        tasks = json.loads((out / "tasks.json").read_text(encoding="utf-8"))
        imported = api.call("POST", f"/api/projects/{project}/import", tasks)
        print(f"project {project}: imported {imported.get('task_count')} tasks")
        second = api.call(
            "POST", "/api/users/", {"email": SECOND, "username": "second", "password": password}
        )
        annotate(api, project, int(second["id"]))
        path = f"/api/projects/{project}/export?exportType=JSON&download_all_tasks=true"
        export = api.raw("GET", path)  # kept as Label Studio wrote it
        saved = work / "label_studio_export.json"
        saved.write_bytes(export)
        print(f"exported {len(json.loads(export))} tasks to {saved}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
    realitycheck("annotate", "import", "--run", str(run), str(saved))
    realitycheck("annotate", "import", "--run", str(run), str(saved))  # again: nothing changes
    if args.fixtures:
        for name in ("tasks.json", "label_config.xml", "annotation.json"):
            shutil.copy(out / name, FIXTURES / name)
        shutil.copy(saved, FIXTURES / "label_studio_export.json")
        print(f"fixtures written to {FIXTURES}")


if __name__ == "__main__":
    main()
