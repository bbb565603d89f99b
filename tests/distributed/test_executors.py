"""The executor seam without a cluster: choices, bad arguments, a missing Ray, a dead address."""

from __future__ import annotations

import socket
import sys

import pytest
from click.testing import CliRunner

from realitycheck.cli import main
from realitycheck.errors import InvalidInputError, MissingDependencyError
from realitycheck.executors import LocalExecutor, RayExecutor, WorkerState, make_executor


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once it is closed


def test_local_executor_maps_in_order():
    seen = list(LocalExecutor().map(lambda shared, item: shared + item, 10, [3, 1, 2]))
    assert seen == [13, 11, 12]


@pytest.mark.parametrize(
    ("name", "address", "match"),
    [
        ("spark", None, "must be one of local, ray. Got 'spark'"),
        ("local", "127.0.0.1:6379", "executor is 'local'"),
    ],
)
def test_make_executor_refuses_bad_choices(name, address, match):
    with pytest.raises(InvalidInputError, match=match):
        make_executor(name, address=address)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_retries": -1}, "'max_retries' parameter of RayExecutor must be an int >= 0"),
        ({"max_in_flight": 0}, "'max_in_flight' parameter of RayExecutor must be an int >= 1"),
    ],
)
def test_ray_executor_checks_its_arguments(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        RayExecutor(**kwargs)


def test_ray_refuses_a_worker_state_before_reaching_a_cluster():
    executor = RayExecutor("127.0.0.1:1")
    with pytest.raises(InvalidInputError, match="not a WorkerState") as info:
        list(executor.map(lambda state, item: item, WorkerState(dict), [1]))
    assert info.value.field == "shared" and executor._ray is None


def test_the_executors_names_are_listed_once_sorted_and_all_importable():
    import realitycheck.executors as executors

    assert list(executors.__all__) == sorted(executors.__all__)
    assert all(hasattr(executors, name) for name in executors.__all__)
    public = {n for n in dir(executors) if not n.startswith("_")}
    assert public == set(executors.__all__)  # no name escapes the list


def test_a_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails
    with pytest.raises(MissingDependencyError, match=r"realitycheck\[distributed\]"):
        make_executor("ray")


def test_import_realitycheck_does_not_import_ray():
    code = "import sys, realitycheck, realitycheck.pipeline, realitycheck.executors; "
    code += "print('ray' in sys.modules)"
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_an_unreachable_address_fails_at_once_without_a_traceback(tmp_path, capsys):
    pytest.importorskip("ray", reason="ray is not installed")
    address = f"127.0.0.1:{_closed_port()}"
    with pytest.raises(InvalidInputError, match="No Ray cluster answers at"):
        RayExecutor(address).connect()
    code = main(
        ["detect", "-d", "halueval", "-D", "length", "--executor", "ray"]
        + ["--ray-address", address, "--out", str(tmp_path / "run")]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "No Ray cluster answers at" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()  # refused before any work


def test_the_stage_verbs_offer_the_executor():
    from realitycheck.cli import cli

    for verb in ("label", "detect", "evaluate"):
        text = CliRunner().invoke(cli, [verb, "--help"]).output
        assert "--executor [local|ray]" in text and "--ray-address" in text, verb
