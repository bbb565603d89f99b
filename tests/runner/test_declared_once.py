"""A setting's default is declared once, at its field: the TOML reader, --help and describe agree.

The strong check edits the one declaration in a copy of the package and
runs a fresh interpreter on the copy: the command's ``--help``, the TOML
reader's value for a table that leaves the key out and ``describe '[table]'``
all show the new default (``[choice]`` has no ``describe`` entry: its plan is
read from :class:`~realitycheck.generation.ChoicePlan`, checked through --help
and the reader). The quick checks compare each option built from a field with
the field, and the run config's attributes with the tables' fields.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import realitycheck
import realitycheck.metrics as M
from realitycheck.analysis import Bootstrap
from realitycheck.cli._app import cli
from realitycheck.errors import UnknownComponentError
from realitycheck.generation import ChoicePlan
from realitycheck.params import default_of
from realitycheck.pipeline import EvaluationConfig
from realitycheck.runner import (
    DatasetTable,
    ExecutorSettings,
    RunConfig,
    RunSettings,
    describe_table,
)

_SRC = Path(realitycheck.__file__).parent

_PROBE = r"""
import json, sys
from pathlib import Path
from click.testing import CliRunner
import realitycheck
from realitycheck.cli._app import cli
from realitycheck.runner import load_run_config

verb, table, path = sys.argv[1:4]
config = Path(sys.argv[4])
runner = CliRunner()
value = load_run_config(config)
for name in path.split("."):  # RunConfig's attribute path of the key
    value = getattr(value, name)
print(json.dumps({
    "package": realitycheck.__file__,
    "help": runner.invoke(cli, [verb, "--help"], terminal_width=100).output,
    "read": value,
    "describe": runner.invoke(cli, ["describe", f"[{table}]"]).output if table else "",
}))
"""

_CONFIG = """\
[run]
out = "runs/a"

[backend]
name = "mock"

[choice]

[[datasets]]
name = "nq-open"
"""


def _probe(tmp_path: Path, edit: tuple[str, str, str], verb: str, table: str, path: str) -> dict:
    """Edit one declaration in a copy of the package; what the copy's CLI and reader say."""
    copy = tmp_path / "src" / "realitycheck"
    shutil.copytree(_SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    module, old, new = edit
    source = copy / module
    text = source.read_text()
    assert text.count(old) == 1, f"the declaration {old!r} is not once in {module}"
    source.write_text(text.replace(old, new))
    config = tmp_path / "study.toml"
    config.write_text(_CONFIG)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, verb, table, path, str(config)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path / "src"), "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["package"].startswith(str(copy)), out["package"]
    return out


@pytest.mark.parametrize(
    ("edit", "verb", "table", "path", "shown", "read", "described"),
    [
        (
            (
                "analysis/_bootstrap.py",
                "param(1000, Interval(int, 1, None)",
                "param(777, Interval(int, 1, None)",
            ),
            "evaluate",
            "bootstrap",
            "bootstrap.n_resamples",
            "Bootstrap resamples. [default: 777]",
            777,
            "n_resamples: int (default 777)",
        ),
        (
            ("executors/_batches.py", "DEFAULT_BATCH_SIZE = 16\n", "DEFAULT_BATCH_SIZE = 23\n"),
            "generate",
            "run",
            "batch_size",
            "[default: 23; x>=1]",
            23,
            "batch_size: int (default 23)",
        ),
        (
            (
                "pipeline/_evaluate_config.py",
                'param("f1_macro", OneOf(*OBJECTIVES))',
                'param("youden", OneOf(*OBJECTIVES))',
            ),
            "evaluate",
            "evaluate",
            "evaluation.threshold_objective",
            "maximises. [default: youden]",
            "youden",
            'threshold_objective: str (default "youden")',
        ),
        (
            (
                "pipeline/_evaluate_config.py",
                'param("platt", OneOf(*CALIBRATION_METHODS))',
                'param("isotonic", OneOf(*CALIBRATION_METHODS))',
            ),
            "evaluate",
            "evaluate",
            "evaluation.calibration",
            "taken as they are). [default: isotonic]",
            "isotonic",
            'calibration: str (default "isotonic")',
        ),
        (
            (
                "generation/_choice.py",
                'param("token", OneOf(NORMALISATIONS))',
                'param("char", OneOf(NORMALISATIONS))',
            ),
            "choose",
            "",
            "choice.plan.normalisation",
            "plain sum. [default: char]",
            "char",
            "",
        ),
        (
            (
                "generation/_choice.py",
                'param("plain", OneOf(TEMPLATES))',
                'param("qa", OneOf(TEMPLATES))',
            ),
            "choose",
            "",
            "choice.plan.template",
            "letters scored. [default: qa]",
            "qa",
            "",
        ),
        (
            ("generation/_choice.py", "shots: int = param(0,", "shots: int = param(2,"),
            "choose",
            "",
            "choice.plan.shots",
            "other questions. [default: 2; x>=0]",
            2,
            "",
        ),
        (
            (
                "generation/_choice.py",
                "top_logprobs: int = param(0,",
                "top_logprobs: int = param(5,",
            ),
            "choose",
            "",
            "choice.plan.top_logprobs",
            "fixed answers: hf). [default: 5; x>=0]",
            5,
            "",
        ),
    ],
)
def test_one_edit_of_a_default_changes_help_reader_and_describe(
    tmp_path, edit, verb, table, path, shown, read, described
):
    out = _probe(tmp_path, edit, verb, table, path)
    assert shown in " ".join(out["help"].split())  # as one line, however click wraps it
    assert out["read"] == read
    assert described in out["describe"]


def _option(command: list[str], name: str):
    sub = cli
    for part in command:
        sub = sub.commands[part]
    return next(p for p in sub.params if name in p.opts)


@pytest.mark.parametrize(
    ("command", "option", "cls", "field"),
    [
        (["evaluate"], "--n-resamples", Bootstrap, "n_resamples"),
        (["evaluate"], "--confidence", Bootstrap, "confidence"),
        (["evaluate"], "--seed", Bootstrap, "seed"),
        (["study"], "--n-resamples", Bootstrap, "n_resamples"),
        (["demo"], "--confidence", Bootstrap, "confidence"),
        (["generate"], "--batch-size", RunSettings, "batch_size"),
        (["generate"], "--executor", ExecutorSettings, "kind"),
        (["label"], "--executor", ExecutorSettings, "kind"),
        (["evaluate"], "--workers", ExecutorSettings, "workers"),
        (["generate"], "--cache-dir", RunSettings, "cache_dir"),
        (["generate"], "--limit", DatasetTable, "limit"),
        (["choose"], "--limit", DatasetTable, "limit"),
        (["evaluate"], "--report", RunSettings, "report"),
        (["study"], "--report", RunSettings, "report"),
        (["choose"], "--normalisation", ChoicePlan, "normalisation"),
        (["choose"], "--template", ChoicePlan, "template"),
        (["choose"], "--shots", ChoicePlan, "shots"),
        (["choose"], "--top-logprobs", ChoicePlan, "top_logprobs"),
        (["evaluate"], "--threshold-objective", EvaluationConfig, "threshold_objective"),
        (["evaluate"], "--calibration", EvaluationConfig, "calibration"),
    ],
)
def test_each_option_built_from_a_field_has_its_default(command, option, cls, field):
    declared = default_of(next(f for f in dataclasses.fields(cls) if f.name == field))
    assert _option(command, option).default == declared


def test_run_options_leave_the_tables_values_unless_given():
    """``run``'s --executor and --workers default to unset, so [executor] holds."""
    assert _option(["run"], "--executor").default is None
    assert _option(["run"], "--workers").default is None


def test_the_run_configs_defaults_are_the_run_tables():
    run_fields = {f.name: f for f in dataclasses.fields(RunSettings)}
    for f in dataclasses.fields(RunConfig):
        if f.name in ("batch_size", "cache", "report"):
            assert f.default == default_of(run_fields[f.name]), f.name


def test_describe_reads_each_tables_fields():
    text = describe_table("bootstrap")
    for f in dataclasses.fields(Bootstrap):
        assert f"{f.name}: " in text
    assert "n_resamples: int (default 1000)" in text and "must be an int >= 1" in text
    evaluate = describe_table("evaluate")  # fields documented under Args: only
    assert "What the calibration-split threshold maximises." in evaluate
    assert "bootstrap:" not in evaluate and "detectors:" not in evaluate  # not its keys
    result = CliRunner().invoke(cli, ["describe", "[executor]", "--json"])
    assert result.exit_code == 0, result.output
    keys = {k["name"]: k for k in json.loads(result.output)["keys"]}
    assert keys["kind"]["default"] == '"local"'
    assert keys["kind"]["constraint"] == "one of ('local', 'ray')"


def test_describe_refuses_an_unknown_table_with_a_close_match():
    result = CliRunner().invoke(cli, ["describe", "[bootstap]"])
    assert isinstance(result.exception, UnknownComponentError)  # the entry point exits 2
    assert "Did you mean '[bootstrap]'?" in str(result.exception)


@pytest.mark.parametrize(
    "function",
    [M.bootstrap_ci, M.bootstrap_distribution, M.paired_auroc_bootstrap, M.wilson_interval],
)
def test_the_metrics_defaults_are_the_bootstraps(function):
    """The metrics sit below the Bootstrap settings (and load numpy, which --help must not),
    so their plain-function defaults are their own; this keeps them equal to its fields."""
    declared = {f.name: default_of(f) for f in dataclasses.fields(Bootstrap)}
    defaults = {
        name: p.default
        for name, p in inspect.signature(function).parameters.items()
        if name in declared and p.default is not inspect.Parameter.empty
    }
    assert defaults
    assert defaults == {name: declared[name] for name in defaults}


@pytest.mark.parametrize(
    ("command", "function"),
    [(["choose"], "choose"), (["generate"], "generate")],
)
def test_a_stages_batch_size_option_is_its_functions_default(command, function):
    import realitycheck.pipeline as P

    declared = inspect.signature(getattr(P, function)).parameters["batch_size"].default
    assert _option(command, "--batch-size").default == declared
