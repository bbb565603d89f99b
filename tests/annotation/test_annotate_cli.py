"""The annotate verbs on the command line: output, exit codes, and what later verbs see."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pandas as pd

from realitycheck.cli import main


def _export(run, out, *extra, option="--export-dir"):
    args = ["-q", "annotate", "export", "--run", str(run), option, str(out)]
    return main([*args, "-l", "exact_match,rouge_l", "--annotators", "2", *extra])


def _fill(out):
    """Alice and Bob fill items.csv: Alice says hallucinated on q1, q2, q5; Bob on q2, q5."""
    with (out / "items.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        qid = row["response_id"].split("/")[1]
        yes = ("q1", "q2", "q5") if row["slot"] == "1" else ("q2", "q5")
        row["annotator"] = "alice" if row["slot"] == "1" else "bob"
        row["verdict"] = "Hallucinated" if qid in yes else "Faithful"
    path = out / "filled.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_export_then_import_print_what_they_did(quiz_run, tmp_path, capsys):
    out = tmp_path / "sheets"
    assert _export(quiz_run, out, "--format", "csv", "--seed", "4") == 0
    printed = capsys.readouterr().out
    assert "6 items of 6 candidates, by disagreement (seed 4)" in printed
    assert "exact_match=hallucinated, rouge_l=faithful: 6" in printed
    assert "wrote items.csv, annotation.json" in printed and "Label Studio" not in printed
    assert main(["annotate", "import", "--run", str(quiz_run), str(_fill(out))]) == 0
    printed = capsys.readouterr().out
    assert "12 annotations" in printed and "labels: 18 added" in printed
    assert "alice: 6 items, 0.67 hallucinated" in printed  # q1a, q2a, q5a, q5b
    assert "bob: 6 items, 0.50 hallucinated" in printed
    assert "krippendorff_alpha:" in printed and "fleiss_kappa:" in printed
    assert "cohen_kappa alice / bob:" in printed and "on 6 items" in printed
    assert "human: 4 hallucinated, 2 faithful, 0 without a verdict" in printed


def test_export_out_is_the_old_spelling_of_export_dir(quiz_run, tmp_path, capsys):
    # The same files as with --export-dir, and a warning naming the new spelling.
    new, old = tmp_path / "new", tmp_path / "old"
    assert _export(quiz_run, new, "--format", "csv", "--seed", "4") == 0
    capsys.readouterr()
    assert _export(quiz_run, old, "--format", "csv", "--seed", "4", option="--out") == 0
    err = capsys.readouterr().err
    assert "warning: annotate export --out is now --export-dir" in err
    assert (old / "items.csv").read_bytes() == (new / "items.csv").read_bytes()


def test_bad_input_exits_2_with_one_message_and_no_traceback(quiz_run, tmp_path, capsys):
    out = tmp_path / "sheets"
    assert _export(quiz_run, out, "--format", "csv") == 0
    path = _fill(out)
    path.write_text(path.read_text().replace(",Faithful,", ",Unsure,", 1))
    code = main(["annotate", "import", "--run", str(quiz_run), str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and "filled.csv, line" in err and "field 'verdict'" in err
    assert "Traceback" not in err
    export = ["annotate", "export", "--export-dir", str(out)]
    assert main([*export, "--run", str(tmp_path / "nope")]) == 2
    assert "There is no run folder at" in capsys.readouterr().err
    code = main([*export, "--run", str(quiz_run), "--n", "0"])
    assert code == 2
    assert "The 'n' parameter of annotate export must be an int >= 1" in capsys.readouterr().err
    code = main(["annotate", "import", "--run", str(quiz_run), str(tmp_path / "gone.json")])
    assert code == 2 and "gone.json: There is no such file." in capsys.readouterr().err


def test_skipped_unknown_items_are_counted_on_stderr(quiz_run, tmp_path, capsys):
    out = tmp_path / "sheets"
    assert _export(quiz_run, out, "--format", "jsonl") == 0
    lines = (out / "items.jsonl").read_text().splitlines()
    rows = [json.loads(line) | {"annotator": "alice", "verdict": "Faithful"} for line in lines]
    rows[0]["response_id"], rows[0]["item_id"], rows[0]["round"] = "elsewhere/1", "", ""
    path = out / "filled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    assert main(["annotate", "import", "--run", str(quiz_run), str(path)]) == 2
    assert "1 annotation(s) are not items exported from this run" in capsys.readouterr().err
    args = ["annotate", "import", "--run", str(quiz_run), str(path), "--skip-unknown"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "warning: 1 annotation(s) left out: not items exported from this run" in captured.err
    assert "response 'elsewhere/1' is not in this run" in captured.err


def test_evaluate_against_the_imported_humans_measures_the_labelled_items(
    quiz_run, quiz_key, tmp_path, capsys
):
    out = tmp_path / "sheets"
    assert _export(quiz_run, out, "--format", "csv", "--n", "5") == 0
    assert main(["-q", "annotate", "import", "--run", str(quiz_run), str(_fill(out))]) == 0
    args = ["-q", "evaluate", "-d", quiz_key, "--run", str(quiz_run), "--reference", "human"]
    assert main([*args, "-D", "length", "--n-resamples", "20", "--no-report"]) == 0
    metrics = pd.read_csv(quiz_run / "metrics.csv")
    auroc = metrics.query("detector == 'length' and labeler == 'human' and metric == 'auroc'")
    row = auroc[auroc["slice"] == "all"].iloc[0]
    assert (row["n"], row["n_excluded"]) == (5, 11)  # 5 annotated of the 16 responses


def test_the_label_noise_study_and_the_report_show_the_imported_annotators(
    quiz_run, tmp_path, capsys
):
    out = tmp_path / "sheets"
    assert _export(quiz_run, out, "--format", "csv") == 0
    assert main(["-q", "annotate", "import", "--run", str(quiz_run), str(_fill(out))]) == 0
    assert main(["-q", "study", "label_noise", "--run", str(quiz_run)]) == 0
    printed = capsys.readouterr().out
    assert "On quiz, the 2 annotators reach Krippendorff's alpha" in printed
    raters = pd.read_csv(quiz_run / "studies" / "label_noise" / "rater_reliability.csv")
    assert set(raters["rater"]) == {"human:alice", "human:bob"}
    report = (quiz_run / "report.md").read_text()
    assert "[annotation](#study-annotation): 6 items labelled by 2 annotators" in report


def test_the_command_line_loads_no_annotation_code_until_a_verb_runs():
    code = (
        "import sys, realitycheck.cli; "
        "print(sorted(m for m in sys.modules if m.startswith('realitycheck.annotation')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['realitycheck.annotation', 'realitycheck.annotation._names']"
