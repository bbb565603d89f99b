"""A small user run made through the CLI, for the tests of ``check`` and the run folder."""

from __future__ import annotations

import json

from realitycheck.cli import main


def user_run(tmp_path, capsys, n=8):
    """Evaluate ``length`` on ``n`` answers of a files dataset; return the run and the args."""
    path = tmp_path / "data.jsonl"
    rows = [{"qid": f"q{i}", "answer": "word " * (i + 1), "label": i % 2} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    key = f"files[path={path},text=answer,columns=example_id:qid,name=mine]"
    args = ["-q", "evaluate", "-d", key, "-D", "length", "--out", str(run), "--no-report"]
    args += ["--n-resamples", "20"]
    assert main(args) == 0, capsys.readouterr().err
    capsys.readouterr()
    return run, args
