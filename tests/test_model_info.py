"""Per-model metadata files: TOML, YAML and CSV give the same models; bad files say where."""

import textwrap

import pytest

from realitycheck.errors import InvalidInputError
from realitycheck.records.model_info import (
    ModelInfo,
    models_from_manifest,
    models_to_manifest,
    read_models,
)

EXPECTED = {
    "org/base-7b": ModelInfo(
        model="org/base-7b", family="org", size=7e9, instruction_tuned=False, decoding="greedy"
    ),
    "org/chat-7b": ModelInfo(model="org/chat-7b", family="org", size=7e9, instruction_tuned=True),
    "gpt-4o": ModelInfo(model="gpt-4o"),
}

FILES = {
    "models.toml": """\
        ["org/base-7b"]
        family = "org"
        size = 7_000_000_000
        instruction_tuned = false
        decoding = "greedy"

        ["org/chat-7b"]
        family = "org"
        size = 7e9
        instruction_tuned = true

        ["gpt-4o"]
        """,
    "models.yaml": """\
        org/base-7b: {family: org, size: 7000000000, instruction_tuned: false, decoding: greedy}
        org/chat-7b:
          family: org
          size: 7.0e+9
          instruction_tuned: true
        gpt-4o: {}
        """,
    "models.csv": """\
        model,family,size,instruction_tuned,decoding
        org/base-7b,org,7e9,false,greedy
        org/chat-7b,org,7000000000,yes,

        gpt-4o,,,,
        """,
}


@pytest.mark.parametrize("name", FILES)
def test_every_format_gives_the_same_metadata(tmp_path, name):
    path = tmp_path / name
    path.write_text(textwrap.dedent(FILES[name]), encoding="utf-8")
    models = read_models(path)
    assert models == EXPECTED
    assert models_from_manifest(models_to_manifest(models)) == models
    assert models_to_manifest(models)["gpt-4o"] == {}


BAD = [
    (
        "m.toml",
        '["a"]\nfamily = "x"\nsise = 7e9\n',
        r"m\.toml, line 3, field 'a\.sise': Unknown field 'sise'\. Did you mean 'size'",
    ),
    (
        "m.toml",
        '["a"]\nsize = "seven billion"\n',
        r"line 2, field 'a\.size': The 'size' parameter of model 'a' must be a positive number "
        r"of parameters \(e\.g\. 7e9\)\. Got 'seven billion' instead\.",
    ),
    (
        "m.toml",
        '["a"]\nsize = -1\n',
        r"field 'a\.size': The 'size' parameter of model 'a' must be a positive.*Got -1 instead",
    ),
    ("m.toml", '["a"]\nsize = true\n', r"line 2, field 'a\.size'"),
    ("m.toml", '["a"]\ninstruction_tuned = "maybe"\n', r"line 2, field 'a\.instruction_tuned'"),
    (
        "m.toml",
        '["a"]\nfamily = 3\n',
        r"field 'a\.family': The 'family' parameter of model 'a' must be a non-empty str\. Got 3",
    ),
    (
        "m.toml",
        '["a"]\nfamily = "x"\n["a"]\nsize = 1\n',
        r"m\.toml, line 3: The file is not valid TOML",
    ),
    (
        "m.toml",
        "a = 3\n",
        r"line 1, field 'a': The 'a' parameter of the models table must be a table of fields",
    ),
    (
        "m.yaml",
        "a: {family: x}\nb: {size: big}\n",
        r"m\.yaml, line 2, field 'b\.size': The 'size' parameter of model 'b' must be a positive",
    ),
    (
        "m.yaml",
        "a: {family: x}\nb: {}\na: {size: 1}\n",
        r"m\.yaml, line 3, field 'a': The model 'a' is given twice \(first on line 1\)",
    ),
    ("m.yaml", "a:\n  family: x\n  colour: red\n", r"line 3, field 'a\.colour': Unknown field"),
    ("m.yaml", "a: [1, 2\n", r"m\.yaml, line 2: The file is not valid YAML"),
    (
        "m.csv",
        "model,family,size\na,x,7e9\nb,y,7B\n",
        r"m\.csv, line 3, field 'b\.size': The 'size' parameter of model 'b' must be.*Got '7B'",
    ),
    (
        "m.csv",
        "model,family\na,x\nb,y\na,z\n",
        r"m\.csv, line 4, field 'a': The model 'a' is given twice \(first on line 2\)",
    ),
    (
        "m.csv",
        "model,familly\na,x\n",
        r"m\.csv, line 1, field 'familly': Unknown column.*Did you mean 'family'",
    ),
    ("m.csv", "name,family\na,x\n", r"m\.csv, line 1: A models CSV starts with a header"),
    ("m.csv", "model,family\na,x,extra\n", r"m\.csv, line 2: Expected 2 cells"),
    ("m.json", "{}", r"m\.json: A models file is \.toml"),
]


@pytest.mark.parametrize(("name", "content", "match"), BAD)
def test_bad_files_name_the_file_line_and_field(tmp_path, name, content, match):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=match):
        read_models(path)


def test_a_missing_file(tmp_path):
    with pytest.raises(InvalidInputError, match="does not exist"):
        read_models(tmp_path / "none.toml")
