"""`realitycheck generate` and `realitycheck run CONFIG.toml`, end to end.

A third-party backend arrives through its entry point in a subprocess (as a
plugin would); the `hf` backend runs on a tiny Llama built from a config.
"""

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from realitycheck.cli import main
from realitycheck.records import Response, Score
from realitycheck.store import RunStore

PLUGIN = '''
import re
from dataclasses import dataclass
from typing import ClassVar

from realitycheck.backends import Backend, Generation, backend


@backend("echo")
@dataclass(frozen=True, kw_only=True)
class Echo(Backend):
    """Answers 'Answer<i>' to question i; samples vary with the seed."""

    model: str = "echo-1"
    capabilities: ClassVar[frozenset[str]] = frozenset({"completion"})

    def generate(self, requests):
        with open(LOG, "a") as fh:
            fh.write(f"{len(requests)}\\n")
        out = []
        for r in requests:
            i = int(re.findall(r"number (\\d+)", r.prompt)[-1])
            text = f"Answer{i}"
            if r.temperature >= 0.5:
                text = f"Answer{i} or maybe {r.seed}" * (i % 3 + 1)
            usage = {"prompt_tokens": 5, "completion_tokens": 1}
            out.append(Generation(texts=(text,), usage=usage))
        return out
'''


def _trivia(tmp_path, n):
    rows = [
        {
            "question": f"What is the answer to question number {i}?",
            "question_id": f"tc_{i}",
            "question_source": "",
            "answer": {
                "aliases": [f"Answer{i}" if i % 2 else f"Other{i}"],
                "normalized_aliases": [],
                "value": f"Answer{i}" if i % 2 else f"Other{i}",
            },
        }
        for i in range(n)
    ]
    path = tmp_path / "validation-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_generate_and_run_with_a_plugin_backend(tmp_path):
    data = _trivia(tmp_path, 12)
    log = tmp_path / "calls.log"
    (tmp_path / "rc_echo_backend.py").write_text(f"LOG = {str(log)!r}\n" + PLUGIN)
    dist = tmp_path / "rc_echo_backend-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rc-echo-backend\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[realitycheck.backends]\necho = rc_echo_backend\n")
    config = tmp_path / "study.toml"
    config.write_text(
        textwrap.dedent(
            f"""\
            labelers = ["exact_match"]
            detectors = ["length", "mean_len", "std_len"]
            studies = ["length"]

            [run]
            out = "studyrun"
            batch_size = 5

            [[datasets]]
            name = "triviaqa"
            limit = 10
            params = {{ path = "{data.name}" }}

            [backend]
            name = "echo"

            [plan]
            n_samples = 3

            [bootstrap]
            n_resamples = 20
            """
        )
    )
    run = tmp_path / "run"
    generate = [
        "generate",
        "-d",
        f"triviaqa[path={data}]",
        "-b",
        "echo",
        "--plan",
        "default[n_samples=2]",
    ]
    generate += ["--limit", "4", "--out", str(run)]
    script = (
        "import json, sys\nfrom realitycheck.cli import main\n"
        f"codes = [main(['-q', *{generate!r}]), main(['-q', *{generate!r}]),"
        f" main(['-q', 'run', {str(config)!r}])]\n"
        "print(json.dumps(codes))\n"
    )
    env = {
        "PYTHONPATH": str(tmp_path),
        "PATH": "",
        "HOME": str(tmp_path),
        "REALITYCHECK_CACHE_DIR": str(tmp_path / "cache"),
    }
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert json.loads(lines[-1]) == [0, 0, 0], out.stderr
    first, again, study = [line for line in lines if line.startswith("triviaqa:")]
    assert "4 responses generated, 0 already stored, 0 failed (12 calls" in first
    assert "0 responses generated, 4 already stored, 0 failed (0 calls" in again
    # run: 10 examples x (1 + 3) requests; for the first 4 examples, the best answer and
    # samples 1-2 are the very requests `generate` made (same seeds): served by the cache
    assert "10 responses generated" in study and "(28 calls, 12 answered from the cache" in study
    assert sum(int(n) for n in log.read_text().split()) == 12 + 28

    responses = RunStore(tmp_path / "studyrun").read(Response)
    assert len(responses) == 10 and all(len(r.samples) == 3 for r in responses)
    assert all(r.text == f"Answer{r.example_id.split('_')[-1]}" for r in responses)
    metrics = pd.read_csv(tmp_path / "studyrun" / "metrics.csv")
    assert {"length", "mean_len", "std_len"} <= set(metrics["detector"])
    assert set(metrics["labeler"]) == {"exact_match"}
    assert (tmp_path / "studyrun" / "report.html").exists()
    assert (tmp_path / "studyrun" / "studies" / "length").is_dir()
    manifest = json.loads((tmp_path / "studyrun" / "manifest.json").read_text())
    (entry,) = manifest["config"]["generation"].values()
    assert entry["usage"]["calls"] == 28 and entry["usage"]["prompt_tokens"] == 140
    assert manifest["config"]["run_config"]["backend"] == {"name": "echo"}


def test_generate_errors_are_one_paragraph(tmp_path, capsys):
    code = main(["generate", "-d", "nq-open", "-b", "hff", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "Did you mean 'hf'" in err and "Traceback" not in err
    code = main(["generate", "-d", "nq-open", "-b", "hf[model=x]", "--plan", "greddy",
                 "--out", str(tmp_path / "r")])  # fmt: skip
    assert code == 2 and "Did you mean 'greedy'" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("[run]\nout = 'x'\n[[datasets]]\nname = 'nq-open'\nlimt = 3\n")
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.toml, line 5, field 'datasets[0].limt'" in err and "Did you mean 'limit'" in err


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    path = Path(__file__).parents[1] / "whitebox" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_rc_whitebox_models", path)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    folder = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = models.build_tokenizer()
    models.build_model(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_run_with_the_hf_backend_on_a_tiny_model(tmp_path, tiny_lm, capsys, monkeypatch):
    monkeypatch.setenv("REALITYCHECK_CACHE_DIR", str(tmp_path / "cache"))
    data = _trivia(tmp_path, 6)
    config = tmp_path / "hf.toml"
    config.write_text(
        textwrap.dedent(
            f"""\
            labelers = ["exact_match"]
            detectors = ["perplexity", "ln_entropy", "mean_token_entropy", "eigenscore", "logdet"]

            [run]
            out = "hfrun"
            report = false

            [[datasets]]
            name = "triviaqa"
            params = {{ path = "{data}" }}

            [backend]
            name = "hf"
            params = {{ model = "{tiny_lm}", device = "cpu" }}

            [plan]
            n_samples = 3
            max_tokens = 5
            hidden_layers = [2]
            variants = ["zero_shot", "few_shot"]
            few_shot_k = 3

            [bootstrap]
            n_resamples = 20
            """
        )
    )
    assert main(["-q", "run", str(config)]) == 0, capsys.readouterr().err
    store = RunStore(tmp_path / "hfrun")
    responses = store.read(Response)
    assert len(responses) == 12
    for r in responses:
        assert len(r.samples) == 3 and r.model == str(tiny_lm)
        best = r.features["best"]
        assert len(best["token_logprobs"]) == len(best["tokens"]) >= 1
        assert set(best["hidden"]) >= {"last@L2", "mean@L2", "sv@L2"}
    scores = store.read(Score)
    assert len(scores) == 5 * 12
    # A sample may draw EOS first: it has no tokens, so the sample-based detectors that
    # need every sample's tokens or embedding miss that response, and only those.
    empty = {
        r.response_id
        for r in responses
        if any(not s.get("token_logprobs") for s in r.features["samples"])
    }
    needs_samples = ("ln_entropy", "eigenscore")
    missed = [s for s in scores if s.value is None]
    assert all(s.response_id in empty and s.detector in needs_samples for s in missed), [
        s.error for s in missed
    ][:3]
    assert len(missed) <= 2 * len(empty) and len(empty) <= 2
    capsys.readouterr()
    assert main(["-q", "run", str(config)]) == 0
    assert "0 responses generated, 12 already stored" in capsys.readouterr().out


def test_run_without_a_backend_evaluates_the_datasets_own_responses(tmp_path, data_dir, capsys):
    config = tmp_path / "plain.toml"
    config.write_text(
        textwrap.dedent(
            f"""\
            detectors = ["length", "source_overlap"]

            [run]
            out = "plain"
            report = false
            data_dir = "{data_dir}"

            [[datasets]]
            name = "ragtruth"
            params = {{ tasks = ["qa"] }}

            [bootstrap]
            n_resamples = 20
            """
        )
    )
    assert main(["-q", "run", str(config)]) == 0, capsys.readouterr().err
    metrics = pd.read_csv(tmp_path / "plain" / "metrics.csv")
    auroc = metrics.query("labeler == 'human' and metric == 'auroc' and slice == 'all'")
    assert set(auroc["detector"]) == {"length", "source_overlap"}
    assert not (tmp_path / "plain" / "generation_errors.parquet").exists()
