"""Shared fixtures: where the real data lives, and small synthetic runs."""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from realitycheck.backends.openai._server import forget_servers

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("REALITYCHECK_DATA_DIR", REPO.parent / "shared" / "data"))
# No test reads or writes the user's embedding cache (fake models would fill it);
# the tests of that cache point it at their own folder.
os.environ["REALITYCHECK_EMBED_CACHE"] = "off"
# Nor exports the ONNX model into it: tests embed on torch unless they choose onnx.
os.environ["REALITYCHECK_EMBED_ENGINE"] = "torch"
# The fake OpenAI server (tests/backends is no package) imports as a top-level module.
sys.path.insert(0, str(REPO / "tests" / "backends"))
# Garbage collection took about 11 of each xdist worker's ~150 CPU seconds (a full
# collection walks every object still alive: a million by the end, most of them the
# libraries' modules, functions and types). Fewer young collections (the first
# threshold 10,000 allocations instead of 700), and what collection leaves frozen (see
# pytest_collection_finish): 4.5-5 s a worker, ~18 CPU s of the suite's ~570.
gc.set_threshold(10_000, 10, 10)
# Under pytest-xdist (`-n N`, as .ci/run runs the suite) each worker is a process of its
# own: it gets its share of the cores for torch's and BLAS's threads, not all of them
# (two workers of two threads each on two cores spin against each other).
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = max(1, len(os.sched_getaffinity(0)) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_name, str(_share))

FOLDER_GROUPS = ("distributed",)
"""Folders whose files share one costly session fixture (tests/distributed: one Ray cluster)."""


def xdist_scope(nodeid: str) -> str:
    """The unit one xdist worker runs whole: a test file, or a folder of :data:`FOLDER_GROUPS`."""
    path = nodeid.split("::", 1)[0]
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == "tests" and parts[1] in FOLDER_GROUPS:
        return "/".join(parts[:2])
    return path


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection leaves alive out of the collector's sight (``gc.freeze``).

    Those objects (imported libraries, test functions, the collected items) live
    until the process ends, so later full collections need not walk them again;
    garbage is collected first, so none of it is kept.
    """
    gc.collect()
    gc.freeze()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n N --dist loadfile`` (.ci/run): whole files per worker, :data:`FOLDER_GROUPS` whole.

    A module-scoped fixture (a server, a run built once for a file) is then
    built once, not once per worker, and one Ray cluster serves every test
    that asks for one. Files go out in collection order, which
    :func:`pytest_collection_modifyitems` starts with the slow ones so that no
    worker is left with a long file at the end.
    """
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    config.option.loadscopereorder = False
    return FileScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker, the files (see :func:`xdist_scope`) that hold a ``slow`` test first."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    slow = {xdist_scope(item.nodeid) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: xdist_scope(item.nodeid) not in slow)


@pytest.fixture(scope="session", autouse=True)
def _own_user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The user cache folder (call cache, BM25 indexes, ONNX exports) is the session's own.

    Without this, tests read and wrote ``~/.cache/realitycheck``: a call cached by
    an earlier session (or by another xdist worker, at the same time) changed what
    a test saw. A test of that folder's default sets or removes the variable itself.
    """
    old = os.environ.get("REALITYCHECK_CACHE_DIR")
    os.environ["REALITYCHECK_CACHE_DIR"] = str(tmp_path_factory.mktemp("user-cache"))
    yield
    if old is None:
        os.environ.pop("REALITYCHECK_CACHE_DIR", None)
    else:
        os.environ["REALITYCHECK_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def fake_openai() -> Any:
    """The fake OpenAI-compatible server module (``tests/backends/_fake_openai_server.py``).

    Its ``FakeOpenAIServer`` plays the faults a real server cannot produce on
    demand; tests outside ``tests/backends`` reach it through this fixture (or
    ``import _fake_openai_server``: its folder is on the path, see above).
    """
    return importlib.import_module("_fake_openai_server")


@pytest.fixture(autouse=True)
def _fresh_server_facts() -> Iterator[None]:
    """Each test starts without what earlier tests taught the openai backend about servers.

    The backend remembers, per process, what a server at a base URL ignores or
    refuses; a fake server of a later test may reuse a port.
    """
    forget_servers()
    yield
    forget_servers()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real human-labelled data (../shared/data beside the clone)."""
    if not (DATA_DIR / "README.md").exists():
        pytest.fail(f"The shared data folder is missing: {DATA_DIR}. Clone beside ../shared.")
    return DATA_DIR


def write_fruit_answers(path: Path, n: int) -> Path:
    """Write a user's JSONL of ``n`` answers by two models, every third one long and wrong.

    Fields: ``qid``, ``question``, ``answer``, ``references`` (``;``-separated),
    ``is_wrong`` (``yes``/``no``: the human label), ``llm``.
    """
    import json

    rows = []
    for i in range(n):
        wrong = i % 3 == 0
        rows.append(
            {
                "qid": f"q{i}",
                "question": f"What colour is fruit {i}?",
                "answer": "It is bright purple with stripes and sparkles" if wrong else "Red",
                "references": "Red;A red one",
                "is_wrong": "yes" if wrong else "no",
                "llm": "model-a" if i % 2 else "model-b",
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="session")
def fruit_answers():
    """:func:`write_fruit_answers`, for tests in any folder (``fruit_answers(path, n)``)."""
    return write_fruit_answers
