"""The agreement table names the labeler measured `labeler` and its ground truth `reference`.

Schema 1 named them `detector` and `labeler`; a run of schema 1 is still read,
checked and reported, under the new names.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from realitycheck.cli import main
from realitycheck.errors import InvalidInputError
from realitycheck.report import write_report
from realitycheck.store import SCHEMA_VERSION, RunStore, check_run

COLUMNS = ["dataset", "slice", "labeler", "reference", "metric", "value", "ci_low", "ci_high"]


@pytest.fixture
def evaluated(tmp_path, fruit_answers):
    """An evaluated run (rouge_l and token_f1 against the human labels, length scores), its args."""
    answers = fruit_answers(tmp_path / "mine.jsonl", 24)
    dataset = (
        f"files[path={answers},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid+model:llm]"
    )
    folder = tmp_path / "run"
    args = ["-q", "evaluate", "-d", dataset, "-l", "rouge_l,token_f1", "-D", "length"]
    args += ["--n-resamples", "20", "--no-report", "--out", str(folder)]
    assert main(args) == 0
    return folder, args


@pytest.fixture
def run(evaluated):
    return evaluated[0]


def _as_schema_1(folder):
    """Rewrite the run as realitycheck wrote it under schema 1 (agreement: detector, labeler)."""
    path = folder / "agreement.parquet"
    table = pq.read_table(path)
    old = {"labeler": "detector", "reference": "labeler"}
    pq.write_table(table.rename_columns([old.get(n, n) for n in table.column_names]), path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["schema_version"] = 1
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_stored_table_and_the_csv_name_the_labeler_and_its_reference(run):
    stored = pq.read_schema(run / "agreement.parquet").names
    assert stored[:5] == ["labeler", "reference", "metric", "value", "ci_low"]
    assert "detector" not in stored
    csv = pd.read_csv(run / "agreement.csv")
    assert "detector" not in csv.columns
    assert set(csv["labeler"]) == {"rouge_l", "token_f1"} and set(csv["reference"]) == {"human"}
    metrics = pd.read_csv(run / "metrics.csv")  # the metrics table keeps its names
    assert set(metrics["detector"]) == {"length"} and "reference" not in metrics.columns
    assert json.loads((run / "manifest.json").read_text())["schema_version"] == SCHEMA_VERSION == 2


def test_a_run_of_schema_1_reads_under_the_new_names(run):
    store = RunStore(run)
    expected = store.frame("agreement")
    arrow = store.arrow("agreement").to_pandas()
    _as_schema_1(run)
    old = RunStore(run)
    pd.testing.assert_frame_equal(old.frame("agreement"), expected)
    pd.testing.assert_frame_equal(old.arrow("agreement").to_pandas(), arrow)
    picked = old.frame("agreement", columns=["reference", "value"])
    pd.testing.assert_frame_equal(picked, expected[list(picked.columns)])
    assert set(picked["reference"]) == {"human"}


def test_check_finds_nothing_wrong_in_a_run_of_schema_1(run):
    _as_schema_1(run)
    report = check_run(run)
    assert report.findings == [] and report.ok


@pytest.mark.parametrize("version", [0, 3, 999])
def test_a_schema_this_realitycheck_does_not_read_is_refused_and_found(run, version):
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["schema_version"] = version
    (run / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(
        InvalidInputError, match=rf"schema version {version}; .* reads versions 1, 2"
    ):
        RunStore(run)
    (finding,) = check_run(run).findings
    assert f"schema version {version}, not one this realitycheck reads (1, 2)" in finding.problem


def test_the_report_of_a_run_of_schema_1_shows_its_agreement(run, tmp_path):
    _as_schema_1(run)
    files = write_report(RunStore(run), tmp_path / "report")
    markdown = files.markdown.read_text(encoding="utf-8")
    assert "Labeler agreement with humans" in markdown
    stored = RunStore(run).frame("agreement")
    kappa = stored.query("slice == 'all' and labeler == 'rouge_l' and metric == 'cohen_kappa'")
    assert f"{kappa['value'].iloc[0]:.3f}" in markdown
    csv = pd.read_csv(tmp_path / "report" / "agreement.csv")
    assert {"labeler", "reference"} <= set(csv.columns) and "detector" not in csv.columns


def test_evaluate_rewrites_a_run_of_schema_1_in_the_new_layout(evaluated):
    run, args = evaluated
    before = RunStore(run).frame("agreement")
    _as_schema_1(run)
    assert main(args) == 0
    assert pq.read_schema(run / "agreement.parquet").names[:2] == ["labeler", "reference"]
    assert RunStore(run).read_manifest()["schema_version"] == SCHEMA_VERSION
    pd.testing.assert_frame_equal(RunStore(run).frame("agreement"), before)


def test_an_agreement_part_reads_whole_beside_the_table(tmp_path):
    """Parts of either layout merge with the table by the new key."""
    from realitycheck.records import AgreementResult

    store = RunStore(tmp_path)
    row = dict(metric="accuracy", value=0.5, ci_low=0.4, ci_high=0.6, n=10, n_positive=4)
    row |= dict(n_excluded=0, dataset="d")
    store.append([AgreementResult(labeler="judge", reference="human", **row)])
    old = pa.table(
        {"detector": ["judge"], "labeler": ["human"], **{k: [v] for k, v in row.items()}}
    )
    old = old.set_column(old.schema.get_field_index("value"), "value", pa.array([0.7]))
    folder = tmp_path / "agreement.parts"
    pq.write_table(old, folder / "99990101T000000000000-00000000.parquet")
    frame = store.frame("agreement")
    assert frame[COLUMNS[:5]].values.tolist() == [["d", "all", "judge", "human", "accuracy"]]
    assert frame["value"].tolist() == [0.7]  # the newer part, under the same key
    store.compact("agreement")
    assert pq.read_schema(tmp_path / "agreement.parquet").names[:2] == ["labeler", "reference"]
    assert store.frame("agreement")["value"].tolist() == [0.7]
