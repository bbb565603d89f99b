"""The [executor] table of a run config and the `run` verb's --executor / --ray-address."""

import socket
import textwrap

import pytest

from realitycheck.cli import main
from realitycheck.errors import InvalidInputError
from realitycheck.executors import LocalExecutor
from realitycheck.runner import ExecutorSettings, load_run_config

BASE = """\
detectors = ["length"]

[run]
out = "runs/a"

[[datasets]]
name = "nq-open"
"""


def _write(tmp_path, text):
    path = tmp_path / "study.toml"
    path.write_text(textwrap.dedent(text))
    return path


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_without_a_table_the_run_is_local(tmp_path):
    config = load_run_config(_write(tmp_path, BASE))
    assert config.executor == ExecutorSettings(kind="local", address=None)
    assert isinstance(config.executor.build(), LocalExecutor)


def test_local_workers_are_read_and_reach_the_executor(tmp_path):
    config = load_run_config(_write(tmp_path, BASE + "\n[executor]\nworkers = 3\n"))
    assert config.executor == ExecutorSettings(kind="local", workers=3)
    built = config.executor.build()
    assert isinstance(built, LocalExecutor) and built.workers == 3


def test_a_ray_table_is_read(tmp_path):
    text = BASE + '\n[executor]\nkind = "ray"\naddress = " 10.0.0.1:6379 "\n'
    config = load_run_config(_write(tmp_path, text))
    assert config.executor == ExecutorSettings(kind="ray", address="10.0.0.1:6379")


@pytest.mark.parametrize(
    ("table", "needle", "field", "match"),
    [
        (
            'kind = "rya"',
            "kind",
            "executor.kind",
            "The 'kind' parameter of \\[executor\\] must be one of \\('local', 'ray'\\). "
            "Got 'rya' instead. Did you mean 'ray'",
        ),
        ("kind = 2", "kind", "executor.kind", "must be one of \\('local', 'ray'\\). Got 2 instead"),
        (
            'kind = "ray"\naddress = 6379',
            "address",
            "executor.address",
            "The 'address' parameter of \\[executor\\] must be a non-empty str. Got 6379",
        ),
        (
            'kind = "ray"\naddress = " "',
            "address",
            "executor.address",
            "must be a non-empty str. Got ' ' instead",
        ),
        ('address = "h:1"', "address", "executor.address", 'add kind = "ray"'),
        ('kind = "ray"\nadress = "h:1"', "adress", "executor.adress", "Did you mean 'address'"),
        (
            "workers = 0",
            "workers",
            "executor.workers",
            "The 'workers' parameter of \\[executor\\] must be an int >= 1. Got 0 instead",
        ),
        (
            'workers = "2"',
            "workers",
            "executor.workers",
            "must be an int >= 1. Got '2' instead",
        ),
        (
            "workers = true",
            "workers",
            "executor.workers",
            "must be an int >= 1. Got True instead",
        ),
        ('kind = "ray"\nworkers = 2', "workers", "executor.workers", "a Ray cluster runs"),
    ],
)
def test_bad_values_name_the_file_line_and_field(tmp_path, table, needle, field, match):
    text = BASE + "\n[executor]\n" + table + "\n"
    path = _write(tmp_path, text)
    with pytest.raises(InvalidInputError, match=match) as info:
        load_run_config(path)
    assert info.value.path == str(path)
    assert info.value.field == field
    assert info.value.line == _line_of(text, needle)
    assert info.value.line > _line_of(text, "[executor]")


def test_an_executor_that_is_not_a_table_is_refused(tmp_path):
    text = 'executor = "ray"\n' + BASE
    with pytest.raises(
        InvalidInputError,
        match="The 'executor' parameter of the run config must be a table. Got 'ray'",
    ) as info:
        load_run_config(_write(tmp_path, text))
    assert (info.value.field, info.value.line) == ("executor", 1)


@pytest.mark.parametrize(
    ("table", "kind", "address", "expected"),
    [
        (ExecutorSettings(), None, None, ExecutorSettings()),
        (ExecutorSettings(), "ray", None, ExecutorSettings(kind="ray")),
        (ExecutorSettings(), "ray", "h:2", ExecutorSettings(kind="ray", address="h:2")),
        (
            ExecutorSettings(kind="ray", address="h:1"),
            None,
            None,
            ExecutorSettings(kind="ray", address="h:1"),
        ),
        (
            ExecutorSettings(kind="ray", address="h:1"),
            "ray",
            None,
            ExecutorSettings(kind="ray", address="h:1"),
        ),
        (
            ExecutorSettings(kind="ray", address="h:1"),
            None,
            "h:2",
            ExecutorSettings(kind="ray", address="h:2"),
        ),
        (ExecutorSettings(kind="ray", address="h:1"), "local", None, ExecutorSettings()),
        (ExecutorSettings(), None, "h:2", ExecutorSettings(address="h:2")),
    ],
)
def test_the_command_line_overrides_the_table(table, kind, address, expected):
    assert table.overridden(kind, address) == expected


@pytest.mark.parametrize(
    ("table", "kind", "workers", "expected"),
    [
        (ExecutorSettings(workers=2), None, None, ExecutorSettings(workers=2)),
        (ExecutorSettings(workers=2), None, 1, ExecutorSettings(workers=1)),
        (ExecutorSettings(workers=2), "local", None, ExecutorSettings(workers=2)),
        (ExecutorSettings(workers=2), "ray", None, ExecutorSettings(kind="ray")),
        (ExecutorSettings(kind="ray"), "local", None, ExecutorSettings()),
        (ExecutorSettings(kind="ray"), "local", 4, ExecutorSettings(workers=4)),
        (ExecutorSettings(kind="ray"), None, 4, ExecutorSettings(kind="ray", workers=4)),
    ],
)
def test_workers_are_kept_only_while_the_run_stays_local(table, kind, workers, expected):
    assert table.overridden(kind, None, workers) == expected


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once it is closed


def _files_config(tmp_path, executor_table=""):
    data = tmp_path / "answers.jsonl"
    data.write_text('{"qid": "q1", "question": "Q?", "answer": "Paris", "wrong": 0}\n')
    text = (
        'detectors = ["length"]\n'
        f'[run]\nout = "{tmp_path / "out"}"\nreport = false\n'
        '[[datasets]]\nname = "files"\n'
        f'params = {{ path = "{data}", text = "answer", label = "wrong", '
        'columns = "example_id:qid" }\n' + executor_table
    )
    return _write(tmp_path, text)


def test_run_stops_before_any_work_when_the_configured_cluster_is_unreachable(tmp_path, capsys):
    pytest.importorskip("ray")
    address = f"127.0.0.1:{_closed_port()}"
    config = _files_config(tmp_path, f'[executor]\nkind = "ray"\naddress = "{address}"\n')
    assert main(["-q", "run", str(config)]) != 0
    err = capsys.readouterr().err
    assert f"No Ray cluster answers at '{address}'" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_run_executor_local_overrides_a_ray_table(tmp_path, capsys):
    address = f"127.0.0.1:{_closed_port()}"
    config = _files_config(tmp_path, f'[executor]\nkind = "ray"\naddress = "{address}"\n')
    assert main(["-q", "run", str(config), "--executor", "local"]) == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "metrics.csv").exists()


def test_run_ray_address_without_ray_is_refused(tmp_path, capsys):
    config = _files_config(tmp_path)
    assert main(["-q", "run", str(config), "--ray-address", "h:1"]) != 0
    err = capsys.readouterr().err
    assert "the executor is 'local'" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_run_workers_with_a_ray_table_is_refused_before_any_work(tmp_path, capsys):
    config = _files_config(tmp_path, '[executor]\nkind = "ray"\n')
    assert main(["-q", "run", str(config), "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert "workers sets the threads of the local executor" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_run_config_joins_the_configured_cluster_before_any_work(tmp_path):
    pytest.importorskip("ray")
    from realitycheck.runner import run_config

    address = f"127.0.0.1:{_closed_port()}"
    config = load_run_config(
        _files_config(tmp_path, f'[executor]\nkind = "ray"\naddress = "{address}"\n')
    )
    with pytest.raises(InvalidInputError, match="No Ray cluster answers at"):
        run_config(config)
    assert not (tmp_path / "out").exists()


def test_run_config_builds_a_local_executor_from_the_config(tmp_path):
    from realitycheck.runner import run_config

    outcome = run_config(load_run_config(_files_config(tmp_path)))
    assert outcome.evaluation is not None and (tmp_path / "out" / "metrics.csv").exists()
