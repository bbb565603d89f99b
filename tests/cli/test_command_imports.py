"""What a command imports: only what it uses, so every process starts fast.

Each check runs in a fresh interpreter, since the test process has imported
everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

# What a label or detect command must not import: pandas and scipy.stats take
# 0.3-0.6 s each, and neither is used by those stages; importlib.metadata (45 ms)
# is for plugins and the manifest's versions, which a named component and the
# metadata files settle without it.
HEAVY = ("pandas", "scipy", "scipy.stats", "sklearn", "torch", "transformers")


def _imported(code: str, cwd) -> list[str]:
    """The modules of HEAVY (and importlib.metadata) that ``code`` leaves in sys.modules."""
    watched = [*HEAVY, "importlib.metadata"]
    tail = f"print('\\n' + json.dumps([m for m in {watched!r} if m in sys.modules]))"
    out = subprocess.run(
        [sys.executable, "-c", f"import json, sys\n{code}\n{tail}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_package_the_cli_the_pipeline_and_the_store_stays_light(tmp_path):
    code = "import realitycheck, realitycheck.cli, realitycheck.pipeline, realitycheck.store"
    assert _imported(code, tmp_path) == []


@pytest.mark.parametrize(
    "args",
    [
        ["detect", "-D", "length"],
        ["label", "-l", "exact_match"],
    ],
)
def test_label_and_detect_import_no_pandas_scipy_sklearn_or_importlib_metadata(tmp_path, args):
    (tmp_path / "t.csv").write_text("text,label\nan answer,yes\nanother one,no\n")
    argv = ["-q", *args, "-d", "files[path=t.csv,name=t]", "--out", "run"]
    code = f"from realitycheck.cli import main\nassert main({argv!r}) == 0"
    assert _imported(code, tmp_path) == []
    assert (tmp_path / "run" / "manifest.json").exists()


def test_listing_the_datasets_imports_no_pyarrow(tmp_path):
    # TruthfulQA's columnar loader (pyarrow.json, the store) is imported when it loads.
    code = "from realitycheck.datasets import datasets\ndatasets.names()\n"
    code += "assert 'pyarrow' not in sys.modules, 'pyarrow'"
    # names() scans the plugins' entry points, so importlib.metadata is expected here.
    assert [m for m in _imported(code, tmp_path) if m != "importlib.metadata"] == []


# A help text needs none of the array, table or statistics libraries.
ARRAYS = ("numpy", "pandas", "pyarrow", "scipy")

_EVERY_HELP = f"""
import click
from realitycheck.cli import cli, main
sys.argv[0] = "realitycheck"  # the name click shows in a usage line

def paths(command, path):
    yield path
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from paths(sub, [*path, name])

first = {{}}  # each heavy package -> the first help that loaded it
helps = 0
for path in paths(cli, []):
    try:
        main([*path, "--help"])
    except SystemExit:
        pass
    helps += 1
    for package in {ARRAYS!r}:
        if package in sys.modules:
            first.setdefault(package, " ".join(["realitycheck", *path, "--help"]))
print("\\n" + json.dumps([helps, first]))
"""


def _run(code: str, cwd) -> tuple[str, Any]:
    """The standard output of ``code`` in a fresh interpreter, and its last line read as JSON."""
    out = subprocess.run(
        [sys.executable, "-c", f"import json, sys\n{code}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
    ).stdout
    return out, json.loads(out.strip().splitlines()[-1])


def test_no_help_text_imports_numpy_pandas_pyarrow_or_scipy(tmp_path):
    out, (helps, first) = _run(_EVERY_HELP, tmp_path)
    assert "Usage: realitycheck label [OPTIONS]" in out  # the helps ran
    assert helps >= 15  # the top, every command and every subcommand of a group
    assert first == {}


@pytest.mark.parametrize(
    "package",
    [
        "realitycheck.detectors",
        "realitycheck.studies",
        "realitycheck.generation",
        "realitycheck.pipeline",
        "realitycheck.metrics",
    ],
)
def test_a_package_loads_its_numpy_modules_on_first_use(tmp_path, package):
    code = f"""
import importlib
module = importlib.import_module({package!r})
before = 'numpy' in sys.modules
values = [getattr(module, name) for name in module.__all__]  # every public name resolves
assert all(value is not None for value in values)
assert set(module.__all__) <= set(dir(module))
print(json.dumps([before, 'numpy' in sys.modules]))
"""
    assert _run(code, tmp_path)[1] == [False, True]
