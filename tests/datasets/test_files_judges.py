"""Recorded judges of the ``files`` dataset: verdict columns as ``recorded:<name>`` labels."""

import csv
import glob
import json
import textwrap
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from realitycheck.cli import main
from realitycheck.datasets import datasets
from realitycheck.datasets.files import Files
from realitycheck.datasets.spec_file import load_spec
from realitycheck.errors import InvalidInputError
from realitycheck.store import RunStore

# -- real data: FaithBench's GPT judges, written as a leaderboard-style CSV ------------------


def _faithbench_rows(data_dir: Path) -> list[dict]:
    """One row per FaithBench summary with its GPT judges' recorded 1/0 verdicts (1 = consistent).

    ``classification`` is GPT-4o's verdict in the words of the FaithJudge
    leaderboard (Consistent / Inconsistent); ``gpt4t`` is GPT-4-Turbo's 1/0 as shipped.
    """
    rows = []
    for name in sorted(glob.glob(str(data_dir / "faithbench" / "release" / "batch_*.json"))):
        for sample in json.loads(Path(name).read_text(encoding="utf-8"))["samples"]:
            meta = sample["metadata"]
            rows.append(
                {
                    "source": sample["source"],
                    "summary": sample["summary"],
                    "llm": meta["summarizer"],
                    "classification": {1: "Consistent", 0: "Inconsistent"}[meta["gpt_4o"]],
                    "gpt4t": meta["gpt-4-turbo"],
                }
            )
    return rows


@pytest.fixture(scope="module")
def faithbench_csv(tmp_path_factory, data_dir) -> tuple[Path, list[dict]]:
    rows = _faithbench_rows(data_dir)
    path = tmp_path_factory.mktemp("faithbench_judges") / "board.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path, rows


FAITHBENCH_KEY = (
    "files[path={path},text=summary,columns=context:source+model:llm,"
    "judges=gpt_4o:classification+gpt-4-turbo:gpt4t,positive=0,negative=1,name=fbj]"
)


def test_real_judge_columns_load_as_recorded_labels_with_the_shipped_counts(faithbench_csv):
    path, rows = faithbench_csv
    bundle = datasets.create_from_key(FAITHBENCH_KEY.format(path=path)).load()
    assert len(bundle.responses) == len(rows) == 750
    by_key = Counter(lab.labeler for lab in bundle.labels)
    assert by_key == {"recorded:gpt_4o": 750, "recorded:gpt-4-turbo": 750}  # no human label
    model = {r.response_id: r.model for r in bundle.responses}
    for key, column, hallucinated in (
        ("recorded:gpt_4o", "classification", "Inconsistent"),
        ("recorded:gpt-4-turbo", "gpt4t", 0),
    ):
        labels = [lab for lab in bundle.labels if lab.labeler == key]
        expected = Counter(r["llm"] for r in rows if r[column] == hallucinated)
        got = Counter(model[lab.response_id] for lab in labels if lab.hallucinated)
        assert got == expected  # per generator, counted from the JSON here
        assert all(lab.hallucinated is not None and not lab.error for lab in labels)
    fj = [lab for lab in bundle.labels if lab.labeler == "recorded:gpt_4o"]
    assert sum(lab.hallucinated for lab in fj) == 98  # FaithBench's GPT-4o: 98 of 750
    assert Counter(lab.category for lab in fj) == {"consistent": 652, "inconsistent": 98}
    assert {lab.raw for lab in fj} == {"Consistent", "Inconsistent"}
    turbo = [lab for lab in bundle.labels if lab.labeler == "recorded:gpt-4-turbo"]
    assert sum(lab.hallucinated for lab in turbo) == 138
    assert json.loads(fj[0].spec)["params"]["source"] == "classification"
    notes = " ".join(bundle.notes)
    assert (
        "Verdict mapping of recorded:gpt_4o ('classification'): 'consistent' -> faithful 652, "
        "'inconsistent' -> hallucinated 98." in notes
    )
    assert "recorded:gpt-4-turbo: 138 hallucinated, 612 faithful" in notes
    assert "No label column: the responses carry no human labels." in notes
    assert "Warning" not in notes  # positive/negative set: no polarity guess


def test_the_real_verdicts_equal_those_of_the_faithbench_loader(faithbench_csv, data_dir):
    path, _ = faithbench_csv
    mine = datasets.create_from_key(FAITHBENCH_KEY.format(path=path)).load()
    theirs = datasets.create("faithbench", data_dir=data_dir).load()

    def verdicts(bundle, key: str) -> list[tuple[str, str, bool]]:
        by_id = {r.response_id: r for r in bundle.responses}
        return sorted(
            (by_id[lab.response_id].model, by_id[lab.response_id].text, lab.hallucinated)
            for lab in bundle.labels
            if lab.labeler == key
        )

    for key in ("recorded:gpt_4o", "recorded:gpt-4-turbo"):
        assert verdicts(mine, key) == verdicts(theirs, key)


# -- the invalid class ------------------------------------------------------------------------

BOARD = """\
text,model,subset,classification
a1,m1,qa,Consistent
a2,m1,qa,Inconsistent
a3,m1,summary,Invalid
a4,m2,qa,INVALID
a5,m2,summary,consistent
a6,m2,summary,
"""


def _board(tmp_path: Path, text: str = BOARD, name: str = "board.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _labels(bundle, key: str = "recorded:fj") -> list:
    return [lab for lab in bundle.labels if lab.labeler == key]


@pytest.mark.parametrize(
    ("invalid_as", "verdict", "error"),
    [
        ("hallucinated", True, ""),
        ("faithful", False, ""),
        ("excluded", None, "invalid verdict; excluded by invalid_as='excluded'"),
    ],
)
def test_invalid_as_each_choice(tmp_path, invalid_as, verdict, error):
    path = _board(tmp_path)
    key = f"files[path={path},judges=fj:classification,invalid_as={invalid_as}]"
    bundle = datasets.create_from_key(key).load()
    labels = _labels(bundle)
    assert [lab.hallucinated for lab in labels] == [False, True, verdict, verdict, False, None]
    assert [lab.category for lab in labels] == [
        "consistent",
        "inconsistent",
        "invalid",
        "invalid",
        "consistent",
        "",
    ]
    assert [lab.error for lab in labels[2:4]] == [error, error]
    assert labels[5].error == "empty verdict cell"
    assert [lab.raw for lab in labels[2:4]] == ["Invalid", "INVALID"]
    notes = " ".join(bundle.notes)
    outcome = {True: "hallucinated", False: "faithful", None: "excluded"}[verdict]
    assert f"'invalid' (invalid) -> {outcome} 2" in notes
    assert "2 invalid (" in notes and ": invalid_as)" in notes
    assert f"counted as {invalid_as} (invalid_as;" in notes
    given = 3 + (verdict is not None) * 2
    hallucinated = 1 + (verdict is True) * 2
    assert f"{hallucinated} hallucinated, " in notes and f"of the {given} verdicts" in notes


def test_the_default_counts_invalid_as_hallucinated_as_the_faithjudge_leaderboard(tmp_path):
    files = Files(path=str(_board(tmp_path)), judges=("fj:classification",))
    assert files.invalid_as == "hallucinated" and files.invalid == ("invalid",)
    verdicts = [lab.hallucinated for lab in _labels(files.load())]
    assert verdicts == [False, True, True, True, False, None]


def test_other_invalid_values(tmp_path):
    text = "text,classification\na,Consistent\nb,N/A\nc,unusable\nd,Invalid\n"
    files = Files(
        path=str(_board(tmp_path, text)),
        judges=("fj:classification",),
        invalid=("N/A", "Unusable"),
        invalid_as="excluded",
    )
    assert files.invalid == ("n/a", "unusable")  # compared as cells are: lower-cased
    with pytest.raises(InvalidInputError, match=r"'Invalid' of judge 'fj'") as info:
        files.load()  # 'invalid' is no longer an invalid value, nor a verdict
    assert info.value.line == 5 and info.value.field == "classification"
    ok = Files(
        path=str(_board(tmp_path, text.replace("d,Invalid\n", ""))),
        judges=("fj:classification",),
        invalid=("N/A", "Unusable"),
        invalid_as="excluded",
    )
    labels = _labels(ok.load())
    assert [lab.hallucinated for lab in labels] == [False, None, None]
    assert [lab.category for lab in labels] == ["consistent", "n/a", "unusable"]


# -- refused values and parameters, loudly --------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "match"),
    [
        ("Maybe", r"The verdict 'Maybe' of judge 'fj' is none of the known classes"),
        ("Consistnet", r"Did you mean 'consistent'\?"),
        ("0.7", r"The verdict '0.7' of judge 'fj'"),
        ('"[""Consistent""]"', r"""The verdict '\["Consistent"\]' of judge 'fj'"""),
    ],
)
def test_an_uncovered_verdict_is_an_error_naming_file_line_and_column(tmp_path, cell, match):
    path = _board(tmp_path, f"text,classification\na,Consistent\nb,{cell}\n")
    with pytest.raises(InvalidInputError, match=match) as info:
        Files(path=str(path), judges=("fj:classification",)).load()
    assert info.value.path == str(path)
    assert info.value.line == 3 and info.value.field == "classification"


def test_a_list_cell_in_a_json_file_is_refused(tmp_path):
    path = tmp_path / "board.jsonl"
    path.write_text('{"text": "a", "v": ["Consistent", "Invalid"]}\n', encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"verdict of judge 'v' must be one value"):
        Files(path=str(path), judges=("v",)).load()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"judges": ("bad name:classification",)}, r"judge name 'bad name' must start"),
        ({"judges": ("fj:classification", "fj:other")}, r"The judge 'fj' is named twice"),
        ({"judges": ("a:classification", "b:classification")}, r"read by two judges"),
        ({"judges": ("fj:",)}, r"The judge 'fj' names no column"),
        ({"judges": {"fj": 3}}, r"'judges' parameter of files must be name:column"),
        ({"judges": ("fj:classification",), "label": "classification"}, r"also in 'label'"),
        (
            {"judges": ("fj:classification",), "annotators": ("classification",)},
            r"also in 'annotators'",
        ),
        (
            {"judges": ("fj:classification",), "positive": ("yes", "invalid")},
            r"'invalid' parameter .*\['invalid'\] also map to a verdict",
        ),
        ({"judges": ("fj:classification",), "invalid_as": "refused"}, r"one of \('hallu"),
        ({"judges": ("hhem:classification",), "scores": ("hhem",)}, r"recorded:hhem would"),
        (
            {"judges": ("fj:classification",), "answers": ("a1:faithful", "a2:hallucinated")},
            r"one verdict\s+column cannot say",
        ),
    ],
)
def test_bad_judge_parameters_are_refused_before_reading(tmp_path, params, match):
    with pytest.raises(InvalidInputError, match=match):
        Files(path=str(tmp_path / "absent.csv"), **params)


def test_a_missing_judge_column_says_did_you_mean(tmp_path):
    path = _board(tmp_path)
    with pytest.raises(InvalidInputError, match=r"'clasification' \(for judge:fj\).*Did you"):
        Files(path=str(path), judges=("fj:clasification",)).load()


def test_a_boolean_judge_column_read_by_the_default_lists_warns_with_the_guess(tmp_path, caplog):
    path = _board(tmp_path, "text,gpt\na,1\nb,0\nc,1\n")
    bundle = Files(path=str(path), judges=("gpt",)).load()
    assert [lab.hallucinated for lab in _labels(bundle, "recorded:gpt")] == [True, False, True]
    warning = next(n for n in bundle.notes if n.startswith("Warning: the judge column 'gpt'"))
    assert "'1' -> hallucinated" in warning and "set positive=0,negative=1" in warning
    assert warning in caplog.text
    flipped = Files(path=str(path), judges=("gpt",), positive=("0",), negative=("1",)).load()
    assert [lab.hallucinated for lab in _labels(flipped, "recorded:gpt")] == [False, True, False]
    assert not any(n.startswith("Warning") for n in flipped.notes)


def test_judges_sit_beside_the_human_label(tmp_path):
    text = "text,human_says,classification\na,yes,Consistent\nb,no,Inconsistent\nc,no,Invalid\n"
    bundle = Files(
        path=str(_board(tmp_path, text)),
        label=("human_says",),
        judges=("fj:classification",),
        polarity="confirmed",
    ).load()
    assert [lab.hallucinated for lab in bundle.labels if lab.labeler == "human"] == [
        True,
        False,
        False,
    ]
    assert [lab.hallucinated for lab in _labels(bundle)] == [False, True, True]
    extra = [r.meta["extra"] for r in bundle.responses]
    assert all("classification" not in e and "human_says" not in e for e in extra)


# -- the shapes of the parameter: key, table, spec file --------------------------------------


def test_key_entries_and_a_toml_table_are_the_same_parameter(tmp_path):
    path = str(_board(tmp_path))
    from_key = datasets.create_from_key(f"files[path={path},judges=fj:classification+subset]")
    from_table = Files(path=path, judges={"fj": "classification", "subset": "subset"})
    assert from_key.judges == from_table.judges == ("fj:classification", "subset:subset")
    assert from_key.key == from_table.key


def test_judges_from_a_spec_file(tmp_path):
    _board(tmp_path, BOARD.replace("a6,m2,summary,\n", ""))
    spec = tmp_path / "board.toml"
    spec.write_text(
        textwrap.dedent(
            """\
            [[datasets]]
            name = "board"
            path = "board.csv"
            meta = ["subset"]
            judges = { fj = "classification" }
            invalid_as = "excluded"
            """
        ),
        encoding="utf-8",
    )
    (dataset,) = load_spec(spec)
    verdicts = [lab.hallucinated for lab in _labels(dataset.load())]
    assert verdicts == [False, True, None, None, False]


def test_a_bad_judge_in_a_spec_file_names_the_file_line_and_key(tmp_path):
    _board(tmp_path)
    spec = tmp_path / "board.toml"
    spec.write_text(
        '[[datasets]]\nname = "board"\npath = "board.csv"\ninvalid_as = "dropped"\n',
        encoding="utf-8",
    )
    with pytest.raises(InvalidInputError, match="invalid_as") as info:
        load_spec(spec)
    assert info.value.path == str(spec) and info.value.line == 4


# -- a judge as the reference of evaluate and the report --------------------------------------


def test_evaluate_with_a_recorded_judge_as_reference(tmp_path, faithbench_csv, capsys):
    path, _ = faithbench_csv
    run = tmp_path / "run"
    args = ["-q", "evaluate", "-d", FAITHBENCH_KEY.format(path=path), "-D", "length"]
    args += ["--reference", "recorded:gpt_4o", "--n-resamples", "20", "--out", str(run)]
    assert main(args) == 0
    agreement = pd.read_csv(run / "agreement.csv")
    kappa = agreement.query("slice == 'all' and metric == 'cohen_kappa'")
    assert set(kappa["reference"]) == {"recorded:gpt_4o"}
    assert set(kappa["labeler"]) == {"recorded:gpt-4-turbo"}  # the labeler measured
    accuracy = agreement.query("slice == 'all' and metric == 'accuracy'")["value"].iloc[0]
    assert accuracy == pytest.approx(654 / 750)  # 584 + 70 agree in the JSON
    metrics = pd.read_csv(run / "metrics.csv")
    auroc = metrics.query(
        "detector == 'length' and labeler == 'recorded:gpt_4o' and metric == 'auroc' "
        "and slice == 'all'"
    ).iloc[0]
    assert (auroc["n"], auroc["n_positive"]) == (750, 98)
    overview = pd.read_csv(run / "overview.csv")
    assert "labelled:recorded:gpt_4o" in overview.columns
    assert not any(c.endswith(":human") for c in overview.columns)
    total = overview.query("task == 'all' and model == 'all'").iloc[0]
    assert total["hallucinated:recorded:gpt_4o"] == 98
    report = (run / "report.md").read_text(encoding="utf-8")
    assert r"labelled (recorded:gpt\_4o)" in report
    assert "labelled (human)" not in report
    assert "No human labels are stored" not in report
    coverage = pd.read_csv(run / "coverage.csv")
    assert (coverage.loc[coverage["kind"] == "labeler", "unreadable"] == 0).all()
    capsys.readouterr()


def test_invalid_verdicts_of_a_recorded_judge_are_not_unreadable_replies(tmp_path, capsys):
    path = _board(tmp_path, BOARD.replace("a6,m2,summary,\n", "a6,m2,summary,Inconsistent\n"))
    run = tmp_path / "run"
    key = f"files[path={path},judges=fj:classification,name=board]"
    args = ["-q", "evaluate", "-d", key, "-D", "length", "--reference", "recorded:fj"]
    assert main([*args, "--n-resamples", "20", "--out", str(run)]) == 0
    store = RunStore(run)
    labels = store.frame("labels")
    assert (labels["category"] == "invalid").sum() == 2
    coverage = pd.read_csv(run / "coverage.csv")
    row = coverage.query("key == 'recorded:fj'").iloc[0]
    assert row["unreadable"] == 0 and row["missing"] == 0
    assert row["positive_rate"] == pytest.approx(4 / 6)  # 2 invalid counted as hallucinated
    capsys.readouterr()
