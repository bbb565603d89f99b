"""The CLI on a user's file and on a real dataset, end to end (small and fast)."""

import pandas as pd
import pytest

from realitycheck.cli import main


@pytest.fixture
def user_file(tmp_path, fruit_answers):
    return fruit_answers(tmp_path / "mine.jsonl", 60)


def test_evaluate_a_user_file_then_rerun_resumes(tmp_path, user_file, capsys):
    run = tmp_path / "run"
    dataset = (
        f"files[path={user_file},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid+model:llm]"
    )
    args = [
        "-q",
        "evaluate",
        "-d",
        dataset,
        "-l",
        "rouge_l,token_f1",
        "-D",
        "length",
        "--n-resamples",
        "50",
        "--out",
        str(run),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "rouge_l: 60 computed, 0 already stored" in out
    for name in ("report.html", "report.md", "metrics.csv", "agreement.csv", "manifest.json"):
        assert (run / name).exists(), name
    metrics = pd.read_csv(run / "metrics.csv")
    auroc = metrics.query("detector == 'length' and labeler == 'human' and metric == 'auroc'")
    assert set(auroc["slice"]) == {"all", "model=model-a", "model=model-b"}
    assert (auroc["value"] > 0.9).all()  # the wrong answers are the long ones
    agreement = pd.read_csv(run / "agreement.csv")
    assert {"rouge_l", "token_f1"} <= set(agreement["labeler"])
    assert main(args) == 0
    assert "rouge_l: 0 computed, 60 already stored" in capsys.readouterr().out


def test_bad_user_file_names_file_line_and_field(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "ok", "label": "yes"}\n{"text": "fine", "label": "maybe"}\n')
    code = main(
        [
            "-q",
            "evaluate",
            "-d",
            f"files[path={path},positive=yes,negative=no]",
            "-D",
            "length",
            "--out",
            str(tmp_path / "r"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "bad.jsonl" in err and "line 2" in err and "'label'" in err
    assert "Traceback" not in err


def test_real_ragtruth_qa_slice(tmp_path, data_dir, capsys):
    run = tmp_path / "rt"
    args = [
        "-q",
        "evaluate",
        "-d",
        "ragtruth[tasks=qa]",
        "--data-dir",
        str(data_dir),
        "-l",
        "knowledge_f1",
        "-D",
        "length,novel_numbers,source_overlap",
        "--n-resamples",
        "50",
        "--no-report",
        "--out",
        str(run),
    ]
    assert main(args) == 0
    metrics = pd.read_csv(run / "metrics.csv")
    row = metrics.query(
        "detector == 'length' and labeler == 'human' and metric == 'auroc' and slice == 'all'"
    ).iloc[0]
    assert row["n"] == 817 and row["n_positive"] == 259
    assert 0.4 < row["value"] < 0.9
    models = {s for s in metrics["slice"] if s.startswith("model=")}
    assert len(models) == 6


def test_reference_option_on_evaluate_study_and_report(tmp_path, user_file, capsys):
    run = tmp_path / "run"
    dataset = (
        f"files[path={user_file},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid+model:llm]"
    )
    common = ["--n-resamples", "30"]
    evaluate = ["-q", "evaluate", "-d", dataset, "-l", "rouge_l", "-D", "length"]
    assert main([*evaluate, *common, "--reference", "rouge_l", "--out", str(run)]) == 0
    agreement = pd.read_csv(run / "agreement.csv")
    assert set(agreement["reference"]) == {"rouge_l"} and set(agreement["labeler"]) == {"human"}
    html = (run / "report.html").read_text()  # the report takes evaluate's reference
    assert "Labeler agreement with rouge_l" in html and "against rouge_l labels" in html
    study = ["-q", "study", "leaderboard,labeler_shift", "--run", str(run), *common]
    assert main([*study, "--reference", "rouge_l"]) == 0
    (folder,) = (run / "studies").glob("leaderboard_reference=rouge_l-*")  # named by its key
    board = pd.read_csv(folder / "leaderboard.csv")
    assert "rouge_l_rate" in board.columns and "human_rate" not in board.columns
    assert set(board.loc[board["judge_kind"] == "reference", "judge"]) == {"rouge_l"}
    assert main(["-q", "report", "--run", str(run), "--reference", "human"]) == 0
    assert "Labeler agreement with humans" in (run / "report.html").read_text()
    capsys.readouterr()


def test_evaluate_on_one_thread_writes_the_tables_of_every_core(tmp_path, user_file, capsys):
    dataset = (
        f"files[path={user_file},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid+model:llm]"
    )
    tables = {}
    for workers in (["--workers", "1"], ["--workers", "3"]):
        run = tmp_path / f"run{workers[1]}"
        args = ["-q", "evaluate", "-d", dataset, "-l", "rouge_l", "-D", "length,length[unit=chars]"]
        assert main([*args, "--n-resamples", "40", "--no-report", "--out", str(run), *workers]) == 0
        tables[workers[1]] = [(run / n).read_bytes() for n in ("metrics.csv", "agreement.csv")]
    assert tables["1"] == tables["3"] and len(tables["1"][0]) > 1000
    for bad, needle in (
        (["--workers", "0"], "0 is not in the range x>=1"),
        (["--workers", "2", "--executor", "ray"], "threads of the local executor"),
    ):
        code = main(["evaluate", "-d", dataset, "-D", "length", "--out", str(tmp_path / "x"), *bad])
        err = capsys.readouterr().err
        assert code == 2 and needle in err and "Traceback" not in err, err
