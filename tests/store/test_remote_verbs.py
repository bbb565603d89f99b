"""The verbs on a run on S3 (moto): generate and evaluate work; what needs local files says so."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from object_storage import SECRET

from realitycheck import Example, Response, RunStore
from realitycheck.backends.mock import MockBackend
from realitycheck.cli import main
from realitycheck.generation import SamplingPlan
from realitycheck.pipeline import generate, generation_errors


def _examples(n: int) -> list[Example]:
    return [
        Example(example_id=f"e{i}", dataset="d", task="qa", question=f"Where is town {i}?")
        for i in range(n)
    ]


def _responses(store: RunStore) -> pd.DataFrame:
    df = store.arrow("responses").to_pandas().sort_values("response_id")
    return df.drop(columns=["meta"]).reset_index(drop=True)  # meta holds timings


def test_generate_into_s3_stores_what_a_local_folder_stores_with_its_error_table(
    s3_bucket, tmp_path
):
    plan = SamplingPlan(n_samples=2)
    remote, local = RunStore(s3_bucket("gen")), RunStore(tmp_path / "gen")
    for store in (remote, local):
        generate(store, _examples(6), MockBackend(fail_on="town 3"), plan)
    pd.testing.assert_frame_equal(_responses(remote), _responses(local))
    errors = generation_errors(remote)
    assert list(errors["example_id"]) == ["e3"]
    pd.testing.assert_frame_equal(
        errors.drop(columns=["updated"]), generation_errors(local).drop(columns=["updated"])
    )
    assert "generation_errors" in remote.tables()


def _key(tmp_path: Path) -> str:
    path = tmp_path / "data.jsonl"
    rows = [{"qid": f"q{i}", "answer": "word " * (i + 1), "label": i % 2} for i in range(8)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f"files[path={path},text=answer,columns=example_id:qid,name=mine]"


def test_evaluate_on_s3_writes_tables_and_report_to_the_report_dir(s3_bucket, tmp_path, capsys):
    uri, key = s3_bucket("eval"), _key(tmp_path)
    args = ["-q", "evaluate", "-d", key, "-D", "length", "--n-resamples", "20"]
    assert main([*args, "--out", uri]) != 0  # no local folder for the report: refused first
    err = capsys.readouterr().err
    assert "--report-dir" in err and "Traceback" not in err and SECRET not in err
    assert RunStore(uri).tables() == []  # refused before loading anything
    out = tmp_path / "out"
    assert main([*args, "--out", uri, "--report-dir", str(out)]) == 0, capsys.readouterr().err
    assert main([*args, "--out", str(tmp_path / "local")]) == 0
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err
    ours, theirs = pd.read_csv(out / "metrics.csv"), pd.read_csv(tmp_path / "local/metrics.csv")
    pd.testing.assert_frame_equal(ours, theirs)
    assert (out / "report.html").exists() and SECRET not in (out / "report.html").read_text()
    report = tmp_path / "again"
    assert main(["-q", "report", "--run", uri, "--report-dir", str(report)]) == 0
    assert (report / "report.html").exists()


def test_what_needs_a_local_folder_is_refused_by_name_without_the_secret(
    s3_bucket, tmp_path, capsys
):
    uri = s3_bucket("local-only")
    store = RunStore(uri)
    store.append(_examples(1))
    store.append([Response(response_id="r", example_id="e0", model="m", text="t")])
    assert main(["-q", "study", "length_bias", "--run", uri]) != 0
    err = capsys.readouterr().err
    assert "object storage" in err and "Traceback" not in err and SECRET not in err
    assert main(["-q", "report", "--run", uri]) != 0
    err = capsys.readouterr().err
    assert "--report-dir" in err and SECRET not in err
    assert not Path("s3:").exists()


def test_the_demo_refuses_an_out_on_object_storage_before_any_work(tmp_path, capsys):
    assert main(["-q", "demo", "--report-dir", f"s3://k:{SECRET}@bucket/demo"]) != 0
    err = capsys.readouterr().err
    assert "local folder" in err and SECRET not in err and not Path("s3:").exists()


def _labelled(store: RunStore) -> RunStore:
    """60 examples with one response each, a human label and a noisy score that tracks it."""
    import numpy as np

    from realitycheck import Label, Score

    rng = np.random.default_rng(7)
    bad = rng.random(60) < 0.4
    store.append(_examples(60))
    store.append(
        [Response(response_id=f"r{i}", example_id=f"e{i}", model="m", text="t") for i in range(60)]
    )
    store.append(
        [
            Label(response_id=f"r{i}", labeler="human", hallucinated=bool(b))
            for i, b in enumerate(bad)
        ]
    )
    store.append(
        [
            Score(response_id=f"r{i}", detector="signal", value=float(b) + rng.normal())
            for i, b in enumerate(bad)
        ]
    )
    return store


def test_a_supervised_detector_on_s3_scores_as_on_a_folder_and_stores_its_weights_there(
    s3_bucket, tmp_path
):
    import io

    import numpy as np

    from realitycheck import detect
    from realitycheck.detectors import detectors

    key = "probe[embedding=false,scores=signal]"
    remote, local = (_labelled(RunStore(s3_bucket("supervised"))), _labelled(RunStore(tmp_path)))
    for store in (remote, local):
        detect(store, [detectors.create_from_key(key)])
    ours, theirs = ((f := s.frame("scores"))[f["detector"] == key] for s in (remote, local))
    assert ours["value"].notna().sum() > 10
    pd.testing.assert_frame_equal(
        ours.sort_values("response_id").reset_index(drop=True),
        theirs.sort_values("response_id").reset_index(drop=True),
    )
    scored = ours[ours["value"].notna()]
    (trained,) = {json.loads(spec)["trained"]["weights"] for spec in scored["spec"]}
    assert remote.remote is not None
    stored = remote.remote.read_bytes(f"{trained}/weights.npz")
    assert stored is not None
    with np.load(io.BytesIO(stored)) as mine, np.load(tmp_path / trained / "weights.npz") as ref:
        assert sorted(mine.files) == sorted(ref.files)
        for name in ref.files:
            np.testing.assert_array_equal(mine[name], ref[name])


def test_a_cache_dir_on_object_storage_is_refused(tmp_path, capsys):
    args = ["-q", "detect", "-d", _key(tmp_path), "-D", "length", "--out", str(tmp_path / "r")]
    assert main([*args, "--cache-dir", f"s3://k:{SECRET}@bucket/cache"]) != 0
    err = capsys.readouterr().err
    assert "SQLite" in err and SECRET not in err and not Path("s3:").exists()


def test_ingest_into_s3_prints_the_redacted_run(s3_bucket, tmp_path, capsys):
    uri = s3_bucket("ingest")
    assert main(["ingest", "-d", _key(tmp_path), "--out", uri]) == 0
    out = capsys.readouterr().out
    assert "run: s3://<redacted>@" in out and SECRET not in out
    assert len(RunStore(uri).frame("responses")) == 8


def test_a_dry_run_reads_the_responses_a_run_on_s3_holds(s3_bucket, tmp_path, capsys):
    uri, key = s3_bucket("dry"), _key(tmp_path)
    assert main(["-q", "ingest", "-d", key, "--out", uri]) == 0
    store = RunStore(uri)
    extra = Response(response_id="extra", example_id="mine/q0", model="m", text="more")
    store.append([extra])  # the run now holds 9 responses; the dataset file has 8
    capsys.readouterr()
    args = ["-q", "label", "-d", key, "-l", "rouge_l", "--dry-run", "--out", uri]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "dry run: 9 responses" in out and SECRET not in out


def _run_config(tmp_path: Path, uri: str) -> Path:
    """A run config with the run at ``uri`` and a detector on the user's answers."""
    data = tmp_path / "data.jsonl"  # written by _key
    config = tmp_path / "run.toml"
    config.write_text(
        'detectors = ["length"]\n'
        f'[run]\nout = "{uri}"\nreport_dir = "{tmp_path / "config"}"\nreport = false\n'
        f'[[datasets]]\nname = "files"\nparams = {{ path = "{data}", text = "answer", '
        'columns = { example_id = "qid" }, name = "mine" }\n[bootstrap]\nn_resamples = 20\n'
    )
    return config


def test_each_verb_on_s3_asks_for_the_bucket_once(s3_bucket, s3_requests, tmp_path):
    uri, key = s3_bucket("once"), _key(tmp_path)
    bucket = uri.split("@", 1)[1].split("/", 1)[0]
    questions = tmp_path / "questions.jsonl"
    questions.write_text('{"qid": "q0", "answer": "a", "question": "Where?"}\n')
    asked = f"files[path={questions},text=answer,columns=example_id:qid,name=asked]"
    verbs = {
        "generate": ["generate", "-d", asked, "-b", "mock", "--plan", "default[n_samples=1]"]
        + ["--no-cache", "--out", uri],
        "ingest": ["ingest", "-d", key, "--out", uri],
        "detect": ["detect", "-d", key, "-D", "length", "--out", uri],
        "evaluate": ["evaluate", "-d", key, "-D", "length", "--n-resamples", "20"]
        + ["--out", uri, "--report-dir", str(tmp_path / "evaluate")],
        "study": ["study", "length", "--n-resamples", "20", "--workers", "1"]
        + ["--run", uri, "--report-dir", str(tmp_path / "study")],
        "report": ["report", "--run", uri, "--report-dir", str(tmp_path / "report")],
        "check": ["check", "--run", uri],
        "run": ["run", str(_run_config(tmp_path, uri))],
    }
    for verb, args in verbs.items():
        s3_requests.clear()
        assert main(["-q", *args]) == 0, verb
        heads = [path for method, path in s3_requests if method == "HEAD"]
        assert heads.count(f"/{bucket}") == 1, (verb, heads)
        assert len(s3_requests) > 10  # the run itself was read through the same server
