"""A run config's dataset paths: a list of data files, and dataset spec files (one or a list)."""

import textwrap
from pathlib import Path

import pytest

from realitycheck.errors import InvalidInputError
from realitycheck.runner import load_run_config

BOARD = "text,model,subset,classification\na,m1,qa,Consistent\nb,m2,qa,Invalid\n"


def _files(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text(BOARD)
    (tmp_path / "data" / "b.csv").write_text(BOARD.replace("a,", "c,").replace("b,", "d,"))
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "board.toml").write_text(
        textwrap.dedent(
            """\
            [[datasets]]
            name = "board"
            path = "../data/a.csv"
            meta = ["subset"]
            judges = { fj = "classification" }
            """
        )
    )
    (tmp_path / "specs" / "more.yaml").write_text(
        textwrap.dedent(
            """\
            datasets:
              - name: more
                path: ../data/b.csv
                judges: {fj: classification}
                invalid_as: excluded
            """
        )
    )


def _config(tmp_path: Path, datasets: str) -> Path:
    path = tmp_path / "study.toml"
    path.write_text('[run]\nout = "runs/x"\n\n' + textwrap.dedent(datasets))
    return path


def _line(path: Path, needle: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if needle in line)


def test_a_list_of_data_files_is_one_dataset_each_path_relative_to_the_config(tmp_path):
    _files(tmp_path)
    path = _config(
        tmp_path,
        """\
        [[datasets]]
        name = "files"
        params = { path = ["data/a.csv", "data/b.csv"], judges = ["fj:classification"] }
        """,
    )
    (entry,) = load_run_config(path).datasets
    assert entry.dataset.path == (str(tmp_path / "data/a.csv"), str(tmp_path / "data/b.csv"))
    bundle = entry.dataset.load()
    assert len(bundle.responses) == 4
    assert [lab.labeler for lab in bundle.labels] == ["recorded:fj"] * 4


def test_one_spec_file_and_a_list_of_them(tmp_path):
    _files(tmp_path)
    one = _config(tmp_path, '[[datasets]]\nspec = "specs/board.toml"\n')
    (entry,) = load_run_config(one).datasets
    assert entry.dataset.run_name == "board" and entry.dataset.path == str(
        tmp_path / "specs" / "../data/a.csv"
    )
    several = _config(
        tmp_path,
        """\
        [[datasets]]
        spec = ["specs/board.toml", "specs/more.yaml"]

        [[datasets]]
        name = "nq-open"
        """,
    )
    config = load_run_config(several)
    assert [e.dataset.run_name for e in config.datasets[:2]] == ["board", "more"]
    assert config.datasets[2].dataset.name == "nq_open"
    more = config.datasets[1].dataset
    assert more.invalid_as == "excluded"
    verdicts = [lab.hallucinated for lab in more.load().labels]
    assert verdicts == [False, None]


@pytest.mark.parametrize(
    ("datasets", "needle", "field", "match"),
    [
        (
            '[[datasets]]\nspec = ["specs/board.toml", "specs/nope.toml"]\n',
            "spec =",
            "datasets[0].spec[1]",
            r"The spec file '.*nope\.toml' does not exist",
        ),
        (
            '[[datasets]]\nspec = ["specs/board.toml", "data/a.csv"]\n',
            "spec =",
            "datasets[0].spec[1]",
            r"Expected a dataset spec file \(\.toml, \.yaml, \.yml\). Got 'a\.csv'",
        ),
        (
            '[[datasets]]\nspec = ["specs/board.toml", 3]\n',
            "spec =",
            "datasets[0].spec[1]",
            r"The 'spec\[1\]' parameter of \[datasets\] must be a str. Got 3 instead",
        ),
        ("[[datasets]]\nspec = []\n", "spec =", "datasets[0].spec", r"non-empty array"),
        (
            "[[datasets]]\nspec = 3\n",
            "spec =",
            "datasets[0].spec",
            r"The 'spec' parameter of \[datasets\] must be a path or a non-empty array of paths",
        ),
        (
            '[[datasets]]\nname = "files"\nspec = "specs/board.toml"\n',
            "spec =",
            "datasets[0].spec",
            r"either one dataset \(name and params\) or spec files",
        ),
        (
            '[[datasets]]\nname = "specs/board.toml"\n',
            "name =",
            "datasets[0].name",
            r"is a dataset spec file: write spec = 'specs/board.toml'",
        ),
        (
            '[[datasets]]\nname = "files"\nparams = { path = ["data/a.csv", 7] }\n',
            "params =",
            "datasets[0].params.path[1]",
            r"The 'path\[1\]' parameter of \[datasets.params\] must be a str. Got 7 instead",
        ),
        (
            '[[datasets]]\nname = "files"\nparams = { path = [] }\n',
            "params =",
            "datasets[0].params.path",
            r"non-empty array of paths",
        ),
        (
            '[[datasets]]\nspec = "specs/board.toml"\n\n'
            '[[datasets]]\nname = "files"\nparams = { path = "data/b.csv", title = "board" }\n',
            'title = "board"',
            "datasets[1].params",
            r"Two datasets are named 'board' \(the first by datasets\[0\]\.spec\)",
        ),
        (
            '[[datasets]]\nspec = ["specs/board.toml", "specs/board.toml"]\n',
            "spec =",
            "datasets[0].spec",
            None,  # the same dataset twice: one dataset, no error
        ),
    ],
)
def test_bad_paths_name_the_file_line_and_field(tmp_path, datasets, needle, field, match):
    _files(tmp_path)
    path = _config(tmp_path, datasets)
    if match is None:
        assert len(load_run_config(path).datasets) == 2  # the run loads one once
        return
    with pytest.raises(InvalidInputError, match=match) as info:
        load_run_config(path)
    assert info.value.path == str(path)
    assert info.value.field == field
    assert info.value.line == _line(path, needle)


def test_a_mistake_inside_a_spec_file_names_the_spec_file_its_line_and_key(tmp_path):
    _files(tmp_path)
    spec = tmp_path / "specs" / "board.toml"
    spec.write_text(spec.read_text().replace('meta = ["subset"]', 'invalid_as = "dropped"'))
    path = _config(tmp_path, '[[datasets]]\nspec = ["specs/more.yaml", "specs/board.toml"]\n')
    with pytest.raises(InvalidInputError, match="invalid_as") as info:
        load_run_config(path)
    assert info.value.path == str(spec)
    assert info.value.line == _line(spec, "invalid_as")
