"""The generic TOML table reader: a settings dataclass read with the key's line in every message."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from realitycheck.errors import InvalidInputError
from realitycheck.params import InstanceOf, Interval, OneOf, OrNone, as_tuple, check_params, param
from realitycheck.params.toml_lines import read_toml, section_keys


@dataclass(frozen=True, kw_only=True)
class _Settings:
    size: int = param(4, Interval(int, 1), doc="How many.")
    mode: str = param("fast", OneOf("fast", "slow"))
    names: tuple[str, ...] = param((), convert=as_tuple)
    flag: bool | None = param(None, OrNone(InstanceOf(bool)))
    given: object = None

    def __post_init__(self) -> None:
        check_params(self, owner="[job]")


TEXT = """\
top = 1

[job]
size = 8
mode = "slow"
names = ["a", "b"]
"""


def _file(tmp_path: Path, text: str):
    path = tmp_path / "job.toml"
    path.write_text(text)
    return (path, *read_toml(path, "The job config"))


def test_a_table_becomes_its_dataclass_with_defaults_for_keys_left_out(tmp_path):
    _, reader, raw = _file(tmp_path, TEXT)
    job = reader.section(_Settings, raw["job"], ["job"], skip=("given",), given="x")
    assert job == _Settings(size=8, mode="slow", names=("a", "b"), given="x")
    assert reader.section(_Settings, None, ["job"]) == _Settings()
    assert section_keys(_Settings) == ("size", "mode", "names", "flag", "given")


@pytest.mark.parametrize(
    ("edit", "needle", "field", "match"),
    [
        (
            ("size = 8", "size = 0"),
            "size = 0",
            "job.size",
            r"The 'size' parameter of \[job\] must be an int >= 1\. Got 0 instead\.",
        ),
        (
            ("size = 8", "size = true"),
            "size = true",
            "job.size",
            r"The 'size' parameter of \[job\] must be an int >= 1\. Got True instead\.",
        ),
        (
            ('mode = "slow"', 'mode = "slwo"'),
            "slwo",
            "job.mode",
            r"must be one of \('fast', 'slow'\)\. Got 'slwo' instead\. Did you mean 'slow'\?",
        ),
        (
            ('mode = "slow"', 'mod = "slow"'),
            "mod =",
            "job.mod",
            r"Unknown key 'mod'\. Did you mean 'mode'.* Allowed here: size, mode, names, flag\.",
        ),
        (
            ("[job]\n", "job = 3\n[other]\n"),
            "job = 3",
            "job",
            r"The 'job' parameter of the job config must be a table\. Got 3 instead\.",
        ),
    ],
)
def test_every_mistake_has_one_shape_naming_file_line_and_key(tmp_path, edit, needle, field, match):
    text = TEXT.replace(*edit)
    assert text != TEXT
    path, reader, raw = _file(tmp_path, text)
    with pytest.raises(InvalidInputError, match=match) as info:
        reader.section(_Settings, raw.get("job"), ["job"], skip=("given",))
    assert info.value.path == str(path)
    assert info.value.field == field
    assert info.value.line == next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)
    assert str(info.value).startswith(f"{path}, line {info.value.line}, field {field!r}: ")


def test_an_array_item_is_named_by_its_index(tmp_path):
    _, reader, raw = _file(tmp_path, TEXT)
    with pytest.raises(
        InvalidInputError, match=r"The 'names\[1\]' parameter of \[job\] must be a str"
    ):
        reader.typed(3, str, ["job", "names", 1])


def test_a_field_the_table_does_not_hold_is_refused_as_a_key(tmp_path):
    _, reader, raw = _file(tmp_path, TEXT + "given = 1\n")
    with pytest.raises(InvalidInputError, match="Unknown key 'given'"):
        reader.section(_Settings, raw["job"], ["job"], skip=("given",))


def test_a_missing_or_broken_file_is_named(tmp_path):
    with pytest.raises(InvalidInputError, match="The job config file does not exist"):
        read_toml(tmp_path / "none.toml", "The job config")
    (tmp_path / "bad.toml").write_text("a = = 1\n")
    with pytest.raises(InvalidInputError, match="not valid TOML") as info:
        read_toml(tmp_path / "bad.toml", "The job config")
    assert info.value.line == 1
