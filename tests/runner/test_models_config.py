"""Per-model metadata in a run config ([models]) and from `run --models FILE`."""

import json
import textwrap

import pytest

from realitycheck.cli import main
from realitycheck.errors import InvalidInputError
from realitycheck.records.model_info import ModelInfo
from realitycheck.runner import load_run_config

CONFIG = """\
detectors = ["length"]
studies = ["model_factors"]

[run]
out = "run"
report = false

[[datasets]]
name = "begin"

[models.gpt2]
family = "gpt-2"
instruction_tuned = true

[models."org/base-7b"]
size = 7e9
"""


def _write(tmp_path, text):
    path = tmp_path / "study.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_the_models_table_is_read_and_checked(tmp_path):
    config = load_run_config(_write(tmp_path, CONFIG))
    assert config.models == {
        "gpt2": ModelInfo(model="gpt2", family="gpt-2", instruction_tuned=True),
        "org/base-7b": ModelInfo(model="org/base-7b", size=7e9),
    }


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        (
            "size = 7e9",
            "size = 'seven'",
            r"line 16, field 'org/base-7b\.size': The 'size' parameter of model "
            r"'org/base-7b' must be",
        ),
        ("size = 7e9", "params = 7e9", r"line 16, field 'org/base-7b\.params': Unknown field"),
        ('[models."org/base-7b"]', "[models.gpt2]", r"line 15: The file is not valid TOML"),
    ],
)
def test_bad_metadata_names_the_line_and_field(tmp_path, old, new, match):
    with pytest.raises(InvalidInputError, match=rf"study\.toml, {match}"):
        load_run_config(_write(tmp_path, CONFIG.replace(old, new)))


def test_run_records_the_table_and_a_models_file_and_refuses_a_model_in_both(
    tmp_path, data_dir, capsys
):
    config = _write(
        tmp_path,
        CONFIG.replace(
            'name = "begin"',
            f'name = "begin"\nparams = {{ data_dir = "{data_dir}", splits = ["cmu-dev"] }}',
        ),
    )
    extra = tmp_path / "more.yaml"
    extra.write_text("other/tuned: {family: other, instruction_tuned: true}\n")
    assert main(["-q", "run", str(config), "--models", str(extra)]) == 0, capsys.readouterr().err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["models"] == {
        "gpt2": {"family": "gpt-2", "instruction_tuned": True},
        "org/base-7b": {"size": 7e9},
        "other/tuned": {"family": "other", "instruction_tuned": True},
    }
    extra.write_text("gpt2: {family: x}\n")
    assert main(["-q", "run", str(config), "--models", str(extra)]) == 2
    err = capsys.readouterr().err
    assert "more.yaml, field 'gpt2': The model 'gpt2' is given twice" in err


def test_evaluate_records_a_models_file_before_measuring(tmp_path, data_dir, capsys):
    models = tmp_path / "models.toml"
    models.write_text('[gpt2]\nfamily = "gpt-2"\nsize = 1.5e9\ninstruction_tuned = false\n')
    args = ["-q", "evaluate", "-d", "begin[splits=cmu-dev]", "--data-dir", str(data_dir),
            "-D", "length", "--n-resamples", "20", "--no-report",
            "--run", str(tmp_path / "run")]  # fmt: skip
    assert main([*args, "--models", str(models)]) == 0, capsys.readouterr().err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["models"] == {
        "gpt2": {"family": "gpt-2", "size": 1.5e9, "instruction_tuned": False}
    }
    models.write_text('[gpt2]\nsize = "1.5B"\n')
    assert main([*args, "--models", str(models)]) == 2
    assert "models.toml, line 2, field 'gpt2.size'" in capsys.readouterr().err
