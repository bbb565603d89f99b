"""A `[choice]` run config on the mock backend: skipped variants, retrieval keys, several models."""

from __future__ import annotations

import json
import textwrap

import pytest

from realitycheck.cli import main
from realitycheck.errors import InvalidInputError
from realitycheck.records import Response
from realitycheck.runner import load_run_config
from realitycheck.store import RunStore

HEAD = """
detectors = ["length"]
reference = "gold"
[run]
out = "run"
data_dir = "{data_dir}"
cache = false
report = false
[[datasets]]
name = "truthfulqa_mc"
limit = 2
"""
MOCK = """
[[backend]]
name = "mock"
"""
PASSAGE = {"id": "a", "text": "Vatican City is the smallest country."}
OTHER_MOCK = '[[backend]]\nname = "mock"\nparams = { logprob = [-0.5, -1.0] }\n'


def _write(tmp_path, data_dir, body: str):
    path = tmp_path / "mcq.toml"
    path.write_text(textwrap.dedent(HEAD.format(data_dir=data_dir) + body), encoding="utf-8")
    return path


def test_a_variant_that_cannot_apply_is_skipped_and_recorded(tmp_path, data_dir, capsys):
    body = MOCK + '[choice]\nvariants = ["default", "shuffle_demos[seed=1]"]\n'
    assert main(["run", str(_write(tmp_path, data_dir, body))]) == 0
    store = RunStore(tmp_path / "run")
    assert {r.prompt_variant for r in store.read(Response)} == {"default"}
    (entry,) = store.read_manifest()["config"]["choice"].values()
    skipped = entry["skipped"]["shuffle_demos[seed=1]"]
    assert skipped["questions"] == 2 and "no demonstrations to shuffle" in skipped["reason"]
    assert "shuffle_demos[seed=1] skipped 2 questions" in capsys.readouterr().err


def test_two_mock_models_answer_with_and_without_retrieval(tmp_path, data_dir):
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text(json.dumps(PASSAGE) + "\n", "utf-8")
    body = (
        MOCK
        + OTHER_MOCK
        + '[choice]\nwithout_retrieval = true\nretriever = "bm25[corpus=passages.jsonl]"\n'
    )
    config = load_run_config(_write(tmp_path, data_dir, body))
    assert len(config.backends) == 2 and config.backend is config.backends[0]
    assert config.choice.plan.retriever.corpus == str(corpus)
    assert [p.retriever is None for p in config.choice.plans] == [False, True]
    assert main(["-q", "run", str(config.path)]) == 0
    responses = RunStore(tmp_path / "run").read(Response)
    assert len(responses) == 2 * 2 * 2  # models x questions x with/without retrieval
    assert sum("retriever" in r.meta for r in responses) == 4


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (MOCK + "[choice]\nwithout_retrieval = true\n", r"field 'choice.without_retrieval'"),
        (
            MOCK + '[choice]\nretriever = "bm25[corpus=missing.jsonl]"\n',
            r"missing\.jsonl.*does not exist",
        ),
        (MOCK + MOCK + "[plan]\nn_samples = 0\n", r"field 'backend\[1\]'.*named twice"),
        (MOCK + MOCK + "[choice]\n", r"field 'backend\[1\]'.*named twice"),
    ],
)
def test_bad_choice_configs_name_the_key(tmp_path, data_dir, body, match):
    with pytest.raises(InvalidInputError, match=match):
        config = load_run_config(_write(tmp_path, data_dir, body))
        from realitycheck.runner import run_config

        run_config(config)
    assert not (tmp_path / "run").exists()


def test_choose_cli_takes_a_retriever_and_answers_without_it_too(tmp_path, data_dir, capsys):
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text(json.dumps(PASSAGE) + "\n", "utf-8")
    base = ["choose", "-d", "truthfulqa_mc", "--data-dir", str(data_dir), "--limit", "2",
            "-b", "mock", "--no-cache", "--out", str(tmp_path / "run")]  # fmt: skip
    assert main([*base, "--without-retrieval"]) == 2
    assert "--without-retrieval compares with a --retriever" in capsys.readouterr().err
    rag = ["--retriever", f"bm25[corpus={corpus},cache_dir={tmp_path / 'idx'}]"]
    assert main(["-q", *base, *rag, "--without-retrieval"]) == 0
    responses = RunStore(tmp_path / "run").read(Response)
    assert len(responses) == 4 and sum("retriever" in r.meta for r in responses) == 2
    found = {r.example_id: r.meta["passages"] for r in responses if "retriever" in r.meta}
    assert sorted(found.values()) == [[], ["a"]]  # the second question shares no word


@pytest.mark.parametrize("name", ["mcq_two_models.toml", "mcq_two_models_vllm.toml"])
def test_the_example_configs_parse(name):
    from pathlib import Path

    config = load_run_config(Path(__file__).parents[2] / "examples" / name)
    assert len(config.backends) == 2 and len(config.choice.variants) == 5
    assert len(config.choice.plans) == 2 and config.choice.plan.retriever.name == "bm25"
    assert {b.name for b in config.backends} == {name.endswith("vllm.toml") and "vllm" or "hf"}
    wordings = config.choice.variants[-1].file
    assert Path(wordings).is_file()  # relative to the config, not the working directory


def test_every_choice_plan_field_is_a_key_of_the_choice_table():
    # Declared once: a field added to ChoicePlan (top_logprobs) is a [choice] key at once.
    import dataclasses

    from realitycheck.generation import ChoicePlan
    from realitycheck.runner._choice_config import CHOICE_KEYS

    fields = {f.name for f in dataclasses.fields(ChoicePlan) if f.init}
    assert "top_logprobs" in fields and fields <= set(CHOICE_KEYS)
