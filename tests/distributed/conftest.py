"""A local two-worker Ray cluster, started once for the tests of this folder that ask for it.

A head node with no CPUs (the driver's machine) and a second node with two
CPUs (two worker processes), both on 127.0.0.1 and both stopped at teardown by
killing their process groups and the workers that name the cluster's temp
folder (``ray stop`` would stop every Ray on the host). Tests that need no
cluster never start it. The fixture is session-scoped (a "package" fixture of
a folder without ``__init__.py`` lives as long as the session), and
:func:`pytest_runtest_teardown` stops the cluster after this folder's last
test, so it does not idle through the rest of the suite.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
RAY = str(Path(sys.executable).with_name("ray"))
_RUNNING: list = []  # how to stop the running cluster, if one runs


def pytest_runtest_teardown(item, nextitem):
    """Stop the cluster once no test of this folder comes next."""
    if nextitem is None or HERE not in Path(nextitem.path).parents:
        while _RUNNING:
            _RUNNING.pop()()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        proc = subprocess.Popen(
            [RAY, "start", *args, "--disable-usage-stats"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its daemons stay in this process group
        )
        if proc.wait(timeout=120) != 0:
            raise RuntimeError(f"ray start failed: {log.read_text()[-2000:]}")
    return proc


def _stop(groups: list[int], temp: Path) -> None:
    """Stop the cluster's daemons (their process groups) and workers (which name ``temp``)."""
    import psutil  # a dependency of ray

    workers = [
        p
        for p in psutil.process_iter(["cmdline"])
        if any(str(temp) in part for part in p.info["cmdline"] or ())
    ]
    for group in groups:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                break
            time.sleep(2.0 if sig == signal.SIGTERM else 0.0)
    for proc in workers:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass


@pytest.fixture(scope="session")
def cluster():
    """A running two-worker cluster; yields an executor connected to it."""
    pytest.importorskip("ray", reason="pip install 'realitycheck[distributed]'")
    from realitycheck.executors import RayExecutor

    # A short path: Ray's socket paths under it must fit AF_UNIX's 107 bytes, which
    # pytest's temp folder of an xdist worker (.../pytest-N/popen-gw0/ray0/...) does not.
    temp = Path(tempfile.mkdtemp(prefix="rc-ray-"))
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)]),
        "RAY_USAGE_STATS_ENABLED": "0",
        # Ray 2.60 starts a head with token authentication and reads the token from
        # ~/.ray: a cluster of one machine's test needs none, and the user's is not ours.
        "RAY_AUTH_MODE": "disabled",
    }
    env.pop("RAY_ADDRESS", None)
    groups: list[int] = []
    patch = pytest.MonkeyPatch()  # the driver connects without a token too
    executor = None

    def stop() -> None:
        if executor is not None:
            executor.close()
        _stop(groups, temp)
        shutil.rmtree(temp, ignore_errors=True)
        patch.undo()

    try:
        head = ["--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=0"]
        head += [f"--temp-dir={temp}", "--include-dashboard=false"]
        groups.append(_start(head, env, temp / "head.log").pid)
        node = [f"--address=127.0.0.1:{port}", "--num-cpus=2", "--node-ip-address=127.0.0.1"]
        groups.append(_start(node, env, temp / "node.log").pid)
        patch.setenv("RAY_AUTH_MODE", "disabled")
        executor = RayExecutor(f"127.0.0.1:{port}")
        executor.connect()
        _RUNNING.append(stop)
        yield executor
    finally:
        if stop in _RUNNING:
            _RUNNING.remove(stop)
        stop()
