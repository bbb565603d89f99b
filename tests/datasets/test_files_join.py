"""Side files joined to the ``files`` dataset's rows, by an id column or by position."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from realitycheck.cli import main
from realitycheck.datasets import datasets
from realitycheck.datasets.files import Files
from realitycheck.datasets.spec_file import load_spec
from realitycheck.errors import DataNotFoundError, InvalidInputError

SHAPES = Path(__file__).parent / "shapes"
# PHD (maybenotime/PHD) keeps SelfCheckGPT's scores apart from the benchmark:
# SelfCheckBERTScore/phd_benchmark_score.json is a bare list of numbers, one per
# passage, in the benchmark's order across its strata.
PHD_SCORES = [0.0737, 0.0856, 0.0645, 0.0805]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _phd(tmp_path: Path, scores=PHD_SCORES, **params) -> Files:
    side = tmp_path / "phd_benchmark_score.json"
    side.write_text(json.dumps(scores), encoding="utf-8")
    return Files(
        path=str(SHAPES / "phd_samples.json"),
        records="*",
        text="AI",
        label="label",
        positive=("non-factual",),
        negative=("factual",),
        meta=("stratum",),
        join=(str(side),),
        **({"join_on": "position", "scores": ("phd_benchmark_score",)} | params),
    )


def test_phd_selfcheck_scores_join_by_position_across_strata(tmp_path):
    ds = _phd(tmp_path)
    bundle = ds.load()
    phd = json.loads((SHAPES / "phd_samples.json").read_text())
    records = [r for stratum in ("phd_low", "phd_high") for r in phd[stratum]]
    assert [r.text for r in bundle.responses] == [r["AI"] for r in records]
    assert [s.response_id for s in bundle.scores] == [r.response_id for r in bundle.responses]
    assert [s.value for s in bundle.scores] == PHD_SCORES
    assert {s.detector for s in bundle.scores} == {"recorded:phd_benchmark_score"}
    assert any("Joined phd_benchmark_score.json on position" in n for n in bundle.notes)
    assert [p.name for p in ds.sources()] == ["phd_samples.json", "phd_benchmark_score.json"]


def test_a_side_file_of_another_length_is_refused_by_position(tmp_path, capsys):
    with pytest.raises(
        InvalidInputError,
        match=r"phd_benchmark_score\.json, field 'join': The side file has 3 rows but "
        r"phd_samples\.json has 4; joined by position \(join_on=position\), row k of one goes "
        r"with row k of the other",
    ):
        _phd(tmp_path, PHD_SCORES[:3]).load()
    key = (
        f"files[path={SHAPES / 'phd_samples.json'},records=*,text=AI,"
        f"join={tmp_path / 'phd_benchmark_score.json'},join_on=position]"
    )
    assert main(["-q", "ingest", "-d", key, "--out", str(tmp_path / "run")]) != 0
    err = capsys.readouterr().err
    assert "has 3 rows but phd_samples.json has 4" in err and "Traceback" not in err


def test_a_bad_score_in_a_side_file_names_the_side_file_and_its_line(tmp_path):
    with pytest.raises(
        InvalidInputError,
        match=r"phd_benchmark_score\.json, line 3, field 'phd_benchmark_score': The score must be "
        r"a finite number\. Got 'high' instead\. \(The value comes from the side file joined on "
        r"position, for line 3 of .*phd_samples\.json\.\)",
    ):
        _phd(tmp_path, [0.1, 0.2, "high", 0.4]).load()


MAIN = [
    {"id": "r1", "text": "Paris is the capital of France."},
    {"id": "r2", "text": "Lyon is the capital of France."},
    {"id": 3, "text": "Paris."},
]


def _by_id(tmp_path: Path, side: str, main=MAIN, **params) -> Files:
    _jsonl(tmp_path / "main.jsonl", main)
    (tmp_path / "side.csv").write_text(side, encoding="utf-8")
    return Files(
        path="main.jsonl",
        join=("side.csv",),
        data_dir=tmp_path,
        **({"join_on": "id:rid", "scores": ("selfcheck",)} | params),
    )


def test_a_side_file_joins_by_id_in_any_order_and_counts_its_unused_rows(tmp_path):
    ds = _by_id(tmp_path, "rid,selfcheck,judge\n3,0.1,ok\nr9,0.5,x\nr1,0.2,ok\nr2,0.9,bad\n")
    bundle = ds.load()
    by_text = {r.text: r.response_id for r in bundle.responses}
    values = {s.response_id: s.value for s in bundle.scores}
    assert values[by_text["Paris is the capital of France."]] == 0.2
    assert values[by_text["Lyon is the capital of France."]] == 0.9
    assert values[by_text["Paris."]] == 0.1  # the JSON number 3 finds the CSV text "3"
    assert [r.meta["extra"]["judge"] for r in bundle.responses] == ["ok", "bad", "ok"]
    assert any(
        n.startswith("Warning: 1 of 4 rows of the side file side.csv (lines 3) match no row read")
        for n in bundle.notes
    )


def test_a_side_file_that_repeats_agreeing_columns_joins(tmp_path):
    side = "rid,text,selfcheck\nr1,Paris is the capital of France.,0.2\nr2,,0.9\n3,Paris.,0.1\n"
    bundle = _by_id(tmp_path, side).load()
    assert [s.value for s in bundle.scores] == [0.2, 0.9, 0.1]


@pytest.mark.parametrize(
    ("side", "main", "match"),
    [
        (
            "rid,selfcheck\nr1,0.2\n3,0.1\n",
            MAIN,
            r"main\.jsonl, line 2, field 'id': The id 'r2' is not in the side file .*side\.csv "
            r"\(column 'rid'; 2 ids, such as 'r1', '3'\)\. Every row must find its row there\.",
        ),
        (
            "rid,selfcheck\nr1,0.2\nr1,0.3\n",
            MAIN,
            r"side\.csv, line 3, field 'rid': The id 'r1' repeats the one on line 2; a side file "
            r"joined by id needs one row per id\.",
        ),
        (
            "rid,selfcheck\nr1,0.2\n",
            [{"text": "no id"}],
            r"main\.jsonl, line 1, field 'id': The row has no id to join the side file "
            r"side\.csv on",
        ),
        (
            "id,selfcheck\nr1,0.2\n",
            MAIN,
            r"side\.csv, field 'rid': The side file has no column 'rid' to join on "
            r"\(join_on='id:rid'\)\. Available: id, selfcheck\.",
        ),
        (
            "rid,text,selfcheck\nr1,Paris is the capital of France.,0.2\nr2,Rome.,0.9\n3,x,0.1\n",
            MAIN,
            r"side\.csv, line 3, field 'text': The column 'text' is 'Lyon is the capital of "
            r"France\.' on line 2 of main\.jsonl but 'Rome\.' here; a value given twice must agree",
        ),
    ],
)
def test_bad_joins_by_id_name_files_lines_and_fields(tmp_path, side, main, match):
    with pytest.raises(InvalidInputError, match=match):
        _by_id(tmp_path, side, main).load()


def test_a_missing_id_fails_on_the_command_line_without_traceback(tmp_path, capsys):
    _by_id(tmp_path, "rid,selfcheck\nr1,0.2\n")
    key = (
        f"files[path={tmp_path / 'main.jsonl'},join={tmp_path / 'side.csv'},join_on=id:rid,"
        "scores=selfcheck]"
    )
    assert main(["-q", "ingest", "-d", key, "--out", str(tmp_path / "run")]) != 0
    err = capsys.readouterr().err
    assert "main.jsonl, line 2, field 'id': The id 'r2' is not in the side file" in err
    assert "Traceback" not in err


def test_a_keyed_side_file_of_plain_values_joins_on_its_keys(tmp_path):
    _jsonl(tmp_path / "main.jsonl", MAIN)
    (tmp_path / "selfcheck.json").write_text(json.dumps({"3": 0.1, "r2": 0.9, "r1": 0.2}))
    ds = Files(
        path=str(tmp_path / "main.jsonl"),
        join=(str(tmp_path / "selfcheck.json"),),
        join_on="id",
        scores=("selfcheck",),
    )
    assert [s.value for s in ds.load().scores] == [0.2, 0.9, 0.1]


def test_side_files_follow_the_paths_fields_one_per_file(tmp_path):
    for model, scores in (("gpt", [0.1, 0.2]), ("llama", [0.8, 0.9])):
        rows = [{"text": f"{model} {i}"} for i in range(2)]
        _jsonl(tmp_path / "runs" / model / "out.jsonl", rows)
        (tmp_path / "scores").mkdir(exist_ok=True)
        (tmp_path / "scores" / f"{model}.json").write_text(json.dumps(scores))
    ds = Files(
        path="runs/{model}/out.jsonl",
        join=("scores/{model}.json",),
        join_on="position",
        scores=("value",),  # a list's column: the side file's name without {model}, or 'value'
        data_dir=tmp_path,
    )
    bundle = ds.load()
    got = {r.text: s.value for r, s in zip(bundle.responses, bundle.scores, strict=True)}
    assert got == {"gpt 0": 0.1, "gpt 1": 0.2, "llama 0": 0.8, "llama 1": 0.9}
    assert [p.relative_to(tmp_path).as_posix() for p in ds.sources()] == [
        "runs/gpt/out.jsonl",
        "scores/gpt.json",
        "runs/llama/out.jsonl",
        "scores/llama.json",
    ]


def test_one_side_file_by_position_with_several_files_is_refused(tmp_path):
    for model in ("gpt", "llama"):
        _jsonl(tmp_path / model / "out.jsonl", [{"text": "t"}])
    (tmp_path / "scores.json").write_text("[0.1, 0.2]")
    with pytest.raises(InvalidInputError, match=r"field 'join_on': join_on=position pairs row k"):
        Files(
            path="{model}/out.jsonl", join=("scores.json",), join_on="position", data_dir=tmp_path
        ).load()


def test_a_missing_side_file_is_named(tmp_path):
    _jsonl(tmp_path / "main.jsonl", MAIN)
    with pytest.raises(
        DataNotFoundError, match=r"nope\.csv' \(join of dataset .*\) does not exist"
    ):
        Files(path="main.jsonl", join=("nope.csv",), join_on="id", data_dir=tmp_path).load()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"join": "s.json"}, r"The 'join_on' parameter of files must be 'position', an id column"),
        ({"join_on": "id"}, r"The 'join' parameter of files must be a side file when 'join_on'"),
        ({"join": "s.json", "join_on": ":rid"}, r"'join_on' parameter of files must be 'position'"),
        (
            {"join": "s.txt", "join_on": "id"},
            r"'join' parameter of files must be side files ending",
        ),
        (
            {"join": "{model}/s.json", "join_on": "id"},
            r"'join' parameter of files must be side files whose \{placeholders\} are among those "
            r"of 'path'.*\{model\} is not in the path 'x\.jsonl'",
        ),
    ],
)
def test_bad_join_parameters(params, match):
    with pytest.raises(InvalidInputError, match=match):
        datasets.create("files", path="x.jsonl", **params)


def test_a_spec_files_side_file_is_relative_to_the_spec(tmp_path):
    folder = tmp_path / "phd"
    folder.mkdir()
    (folder / "phd.json").write_text((SHAPES / "phd_samples.json").read_text())
    (folder / "phd_benchmark_score.json").write_text(json.dumps(PHD_SCORES))
    (folder / "phd.toml").write_text(
        '[dataset]\nname = "phd"\npath = "phd.json"\nrecords = "*"\ntext = "AI"\n'
        'positive = ["non-factual"]\nnegative = ["factual"]\n'
        'join = "phd_benchmark_score.json"\njoin_on = "position"\n'
        'scores = ["phd_benchmark_score"]\n',
        encoding="utf-8",
    )
    (ds,) = load_spec(folder / "phd.toml")
    assert [s.value for s in ds.load().scores] == PHD_SCORES
