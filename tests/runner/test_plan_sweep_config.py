"""A generating run config with several [[backend]] and [[plan]] tables: every model, every plan."""

import textwrap

import pytest

from realitycheck.errors import InvalidInputError
from realitycheck.records import Response
from realitycheck.runner import load_run_config, run_config
from realitycheck.store import RunStore

CONFIG = """\
labelers = ["exact_match"]
detectors = ["length"]
studies = [{ name = "significance", params = { group = "decoding", value = "length" } }]
reference = "exact_match"

[run]
out = "run"
cache_dir = "cache"
report = false

[[datasets]]
name = "nq_open"
limit = 2

[[backend]]
name = "mock"
params = { model = "small", reply = "Paris" }

[[backend]]
name = "mock"
params = { model = "large", reply = "The answer is Paris" }

[[plan]]
preset = "greedy"

[[plan]]
n_samples = 0
decoding = "top_p"
best_temperature = 1.0
"""


def _write(tmp_path, text):
    path = tmp_path / "sweep.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_every_model_generates_with_every_plan(tmp_path):
    config = load_run_config(_write(tmp_path, CONFIG))
    assert [b.model for b in config.backends] == ["small", "large"]
    assert [p.decoding for p in config.plans] == ["greedy", "top_p"]
    assert config.plan is config.plans[0] and config.backend is config.backends[0]
    outcome = run_config(config)
    responses = RunStore(tmp_path / "run").read(Response)
    cells = {(r.model, r.decoding, r.example_id) for r in responses}
    assert len(responses) == len(cells) == 2 * 2 * 2
    assert {(r.model, r.decoding) for r in responses} == {
        (m, d) for m in ("small", "large") for d in ("greedy", "top_p")
    }
    assert len(outcome.generation) == 4
    assert all(name.startswith("nq_open (mock[") for name in outcome.generation)
    (study,) = outcome.studies
    assert not study.error
    assert set(study.result.table("groups")["group"]) == {"greedy", "top_p"}


def test_one_backend_and_one_plan_keep_their_plain_report_names(tmp_path):
    text = CONFIG.replace('[[backend]]\nname = "mock"\nparams = { model = "large"', "#", 1)
    text = text.split("[[plan]]\nn_samples")[0]
    text = text.replace('reply = "The answer is Paris" }', "")
    config = load_run_config(_write(tmp_path, text))
    assert len(config.backends) == 1 and len(config.plans) == 1
    assert list(run_config(config).generation) == ["nq_open"]


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        (
            "best_temperature = 1.0\n",
            'best_temperature = 1.0\n[[plan]]\npreset = "greedy"\n',
            r"field 'plan\[2\]': The sampling plan 'plan\[decoding=greedy,n_samples=0\]' is given "
            "twice",
        ),
        ('decoding = "top_p"', 'decodng = "top_p"', r"field 'plan\[1\]"),
        (
            "best_temperature = 1.0",
            "best_temperature = 0.0",
            r"field 'plan\[1\].*best_temperature",
        ),
    ],
)
def test_a_bad_plan_table_names_its_place(tmp_path, old, new, match):
    with pytest.raises(InvalidInputError, match=match):
        load_run_config(_write(tmp_path, CONFIG.replace(old, new)))
