"""``ingest`` loads and counts; loaded samples feed mean_len/std_len; ``--slice-by`` slices."""

from __future__ import annotations

import json

import numpy as np
import pytest

from realitycheck.cli import main
from realitycheck.store import RunStore

ROWS = [
    ("q1", "Paris is the capital", "no", "geo", ["Paris", "Paris it is"]),
    ("q2", "Lyon is the capital of Peru", "yes", "geo", ["Lima", "Lima, the capital city"]),
    ("q3", "two plus two is five", "yes", "maths", ["four", "It is 4 of course"]),
    ("q4", "four", "no", "maths", ["4", "four"]),
    ("q5", "Mercury is closest", "no", "astro", ["Mercury", "Mercury, a small planet"]),
    ("q6", "Pluto is a big star", "yes", "astro", ["a dwarf planet", "Pluto is a dwarf planet"]),
]


def _key(tmp_path):
    path = tmp_path / "shapes.jsonl"
    path.write_text(
        "".join(
            json.dumps({"qid": q, "answer": a, "label": lab, "domain": d, "samples": s}) + "\n"
            for q, a, lab, d, s in ROWS
        )
    )
    return (
        f"files[path={path},text=answer,columns=example_id:qid,samples=samples,"
        "meta=domain,name=shapes]"
    )


def test_ingest_loads_without_measuring_and_prints_counts(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["-q", "ingest", "-d", _key(tmp_path), "--out", str(run)]) == 0
    out = capsys.readouterr().out
    assert (
        "shapes: 6 examples, 6 responses (6 with samples), 6 labels (6 by 'human': "
        "3 hallucinated, 3 not, 0 without a verdict), 0 recorded scores"
    ) in out
    store = RunStore(run)
    assert len(store.frame("responses")) == 6
    assert store.frame("scores").empty and store.frame("metrics").empty
    assert not (run / "report.html").exists()


def test_ingest_of_two_datasets_counts_each(tmp_path, capsys):
    other = tmp_path / "other.csv"
    other.write_text("text,label\nan answer,yes\n")
    args = ["-q", "ingest", "-d", _key(tmp_path), "-d", f"files[path={other},name=other]"]
    assert main([*args, "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "shapes: 6 examples" in out
    assert "other: 1 examples, 1 responses (0 with samples), 1 labels" in out


def test_loaded_samples_give_mean_len_and_std_len_values(tmp_path, capsys):
    run = tmp_path / "run"
    args = ["-q", "detect", "-d", _key(tmp_path), "-D", "mean_len,std_len", "--out", str(run)]
    assert main(args) == 0
    assert "mean_len: 6 computed" in capsys.readouterr().out
    scores = RunStore(run).frame("scores").set_index(["response_id", "detector"])["value"]
    responses = RunStore(run).frame("responses").set_index("response_id")
    for response_id, row in responses.iterrows():
        lengths = np.array([len(s.split()) for s in row["samples"]], dtype=float)
        assert scores[(response_id, "mean_len")] == pytest.approx(lengths.mean())
        assert scores[(response_id, "std_len")] == pytest.approx(lengths.std())


def _evaluate(tmp_path, *extra):
    args = ["-q", "evaluate", "-d", _key(tmp_path), "-D", "length", "--no-report"]
    return main([*args, "--n-resamples", "20", "--out", str(tmp_path / "run"), *extra])


def test_slice_by_adds_one_slice_per_value(tmp_path):
    assert _evaluate(tmp_path, "--slice-by", "domain") == 0
    metrics = RunStore(tmp_path / "run").frame("metrics")
    assert {"all", "domain=astro", "domain=geo", "domain=maths"} <= set(metrics["slice"])
    geo = metrics[(metrics["slice"] == "domain=geo") & (metrics["metric"] == "auroc")]
    assert set(geo["n"]) == {2} and set(geo["n_positive"]) == {1}


def test_without_slice_by_there_are_no_domain_slices(tmp_path):
    assert _evaluate(tmp_path) == 0
    metrics = RunStore(tmp_path / "run").frame("metrics")
    assert not metrics["slice"].str.startswith("domain=").any()


def test_an_unknown_slice_column_is_an_error_before_any_work(tmp_path, capsys):
    assert _evaluate(tmp_path, "--slice-by", "domian") == 2
    err = capsys.readouterr().err
    assert (
        "field 'slice_by': No response of the run has the slice column 'domian'. "
        "Did you mean 'domain'? Available: domain." in err
    )
    assert RunStore(tmp_path / "run").frame("scores").empty


def test_a_quoted_path_and_name_with_commas_work_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "a,b.csv"
    path.write_text("q\tanswer\tlabel\nA, or B?\tB, surely\tno\n")
    key = f'files[path="{path}",text=answer,columns=question:q,name="mine, v2"]'
    assert main(["-q", "ingest", "-d", key, "--out", str(tmp_path / "run")]) == 0
    assert "mine, v2: 1 examples, 1 responses" in capsys.readouterr().out
    responses = RunStore(tmp_path / "run").frame("responses")
    assert responses["text"].tolist() == ["B, surely"]
    assert responses["response_id"].str.startswith("mine, v2/").all()
