"""`realitycheck run` with kind = "ray" in its [executor] table, on the local two-worker cluster.

The same config run locally and on the cluster stores the same labels and
scores and writes byte-identical metrics and agreement files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("ray", reason="ray is not installed: pip install 'realitycheck[distributed]'")

from ray_components import Logged  # noqa: E402  (after the skip)

from realitycheck import RunStore  # noqa: E402
from realitycheck.cli import main  # noqa: E402
from realitycheck.detectors import detectors  # noqa: E402

pytestmark = pytest.mark.slow  # the cluster takes ~30 s to start on two cores
N_QUESTIONS = 40


def _data(folder: Path) -> Path:
    """Two answers per question, one right and one wrong, with a human label each."""
    rows = []
    for i in range(N_QUESTIONS):
        for k, (answer, wrong) in enumerate(((f"Paris {i}", 0), (f"Lyon is it {i * 3}", 1))):
            rows.append(
                {
                    "qid": f"q{i}",
                    "model": f"m{k}",
                    "question": f"Capital {i}?",
                    "references": f"Paris {i}",
                    "answer": answer + " ." * (i % 5),
                    "wrong": (wrong + (i % 7 == 0)) % 2,
                }
            )
    path = folder / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _config(folder: Path, data: Path, name: str, executor: str = "") -> Path:
    """A run config evaluating the answers; ``executor`` is its [executor] table, if any."""
    path = folder / f"{name}.toml"
    log = folder / "calls.log"  # one log for both runs: the detector's key is the same
    path.write_text(
        'labelers = ["rouge_l", "token_f1"]\n'
        f'detectors = ["length", {{ name = "ray_logged", params = {{ log = "{log}" }} }}]\n'
        f'[run]\nout = "{folder / name}"\nreport = false\nbatch_size = 8\n'
        '[[datasets]]\nname = "files"\n'
        f'params = {{ path = "{data}", text = "answer", label = "wrong", '
        'columns = ["example_id:qid", "model:model"] }\n'
        "[bootstrap]\nn_resamples = 50\n" + executor
    )
    return path


def _table(store: RunStore, name: str, keys: list[str]) -> pd.DataFrame:
    return store.arrow(name).to_pandas().sort_values(keys).reset_index(drop=True)


def _pids(log: Path) -> list[int]:
    return [json.loads(line)["pid"] for line in log.read_text().splitlines()]


@pytest.fixture
def logged_registered(monkeypatch):
    """``ray_logged`` resolves in the config (workers get the instance, not the name)."""
    detectors.names()  # load the built-in detectors first
    monkeypatch.setitem(detectors._items, Logged.name, Logged)


def test_a_run_config_on_ray_stores_what_a_local_run_stores(
    cluster, logged_registered, tmp_path, capsys
):
    data = _data(tmp_path)
    ray_table = f'[executor]\nkind = "ray"\naddress = "{cluster.address}"\n'
    assert main(["-q", "run", str(_config(tmp_path, data, "local"))]) == 0, capsys.readouterr().err
    assert set(_pids(tmp_path / "calls.log")) == {os.getpid()}
    batches = len(_pids(tmp_path / "calls.log"))
    config = _config(tmp_path, data, "ray", ray_table)
    assert main(["-q", "run", str(config)]) == 0, capsys.readouterr().err
    on_workers = _pids(tmp_path / "calls.log")[batches:]
    assert len(on_workers) == batches and os.getpid() not in on_workers
    alone, split = RunStore(tmp_path / "local"), RunStore(tmp_path / "ray")
    for name, keys in (
        ("labels", ["response_id", "labeler"]),
        ("scores", ["response_id", "detector"]),
    ):
        ours, theirs = _table(split, name, keys), _table(alone, name, keys)
        assert len(ours) == 2 * N_QUESTIONS * (3 if name == "labels" else 2)
        pd.testing.assert_frame_equal(ours, theirs)
    for name in ("metrics.csv", "agreement.csv"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    manifest = json.loads((tmp_path / "ray" / "manifest.json").read_text())
    assert manifest["config"]["run_config"]["executor"]["kind"] == "ray"
