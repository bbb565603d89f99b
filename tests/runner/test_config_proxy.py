"""``[detect] proxy_backend`` in a run config: a proxy model reads the datasets' own answers.

A run config scores the human-judged answers to TruthfulQA's first questions
with perplexity through the tiny Llama of ``tests/whitebox/conftest.py``, as
``realitycheck detect --backend`` does (same prompts, so the same stored
features); the scores, the manifest and the report name the proxy, and a
rerun makes no forward pass. A bad ``[detect]`` table fails before any work,
naming the config file, the line and the field.
"""

from __future__ import annotations

import importlib
import json
import textwrap

import pytest
from tests.whitebox import test_proxy_features_cli

from realitycheck.errors import InvalidInputError
from realitycheck.generation import GenerationPrompt
from realitycheck.report._html import escape_html
from realitycheck.runner import load_run_config, run_config
from realitycheck.store import RunStore

small_truthfulqa = test_proxy_features_cli.small_truthfulqa  # the fixture, shared
PROMPT = "generation plan[decoding=greedy,n_samples=0], the response's variant or zero_shot"

CONFIG = """\
detectors = ["perplexity", "length"]

[run]
out = "run"
cache = false
data_dir = "{data}"

[[datasets]]
name = "truthfulqa"

[detect]
proxy_backend = '{proxy}'

[bootstrap]
n_resamples = 20
"""


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory):
    """The tiny Llama of ``tests/whitebox/conftest.py``, written by ``save_pretrained``."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.whitebox.conftest import build_model, build_tokenizer

    folder = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = build_tokenizer()
    build_model(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _write(tmp_path, text: str):
    path = tmp_path / "study.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_run_config_scores_truthfulqa_answers_through_a_proxy(
    tiny_lm_dir, request, tmp_path, monkeypatch
):
    data = request.getfixturevalue("small_truthfulqa")
    proxy_key = f'hf[model="{tiny_lm_dir}",device=cpu]'
    path = _write(tmp_path, CONFIG.format(data=data, proxy=proxy_key))
    config = load_run_config(path)
    assert config.proxy is not None and isinstance(config.proxy.prompt, GenerationPrompt)
    assert config.proxy.spec["model"] == str(tiny_lm_dir)
    assert config.proxy.prompt.key == PROMPT  # the CLI's: the stored features are shared

    outcome = run_config(config)
    store = RunStore(tmp_path / "run")
    n = store.arrow("responses").num_rows
    assert n > 20
    (stage,) = [s for s in outcome.stages if "perplexity" in s.computed]
    assert stage.computed["perplexity"] == n
    scores = store.arrow("scores").to_pandas()
    specs = {d: json.loads(s) for d, s in zip(scores["detector"], scores["spec"], strict=True)}
    assert specs["perplexity"]["proxy"] == config.proxy.spec
    assert "proxy" not in specs["length"]
    perplexity = scores[scores["detector"] == "perplexity"]
    assert len(perplexity) == n and perplexity["value"].notna().all()
    manifest = store.read_manifest()
    assert manifest["components"]["perplexity"]["proxy"]["model"] == str(tiny_lm_dir)
    assert manifest["config"]["run_config"]["detect"] == {"proxy_backend": proxy_key}
    page = outcome.report.html.read_text("utf-8")
    assert escape_html(f"perplexity (proxy: {tiny_lm_dir})") in page
    assert "not the generator&#x27;s own uncertainty" in page
    assert "perplexity" in (tmp_path / "run" / "metrics.csv").read_text("utf-8")

    forward = importlib.import_module("realitycheck.backends.hf._forward")
    calls: list[int] = []
    original = forward.forward_features
    monkeypatch.setattr(
        forward, "forward_features", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    again = run_config(load_run_config(path))
    (stage,) = [s for s in again.stages if "perplexity" in s.reused]
    assert stage.reused["perplexity"] == n and stage.computed["perplexity"] == 0
    assert calls == []


BASE = """\
detectors = ["perplexity"]

[run]
out = "run"

[[datasets]]
name = "truthfulqa"

[detect]
proxy_backend = "hf[model=/nowhere]"
"""


@pytest.mark.parametrize(
    ("edit", "needle", "field", "match"),
    [
        (
            ('proxy_backend = "hf[model=/nowhere]"', "proxy_backend = 3"),
            "proxy_backend = 3",
            "detect.proxy_backend",
            "The 'proxy_backend' parameter of \\[detect\\] must be a non-empty str. Got 3 instead.",
        ),
        (
            ('proxy_backend = "hf[model=/nowhere]"', 'proxy_backend = ""'),
            'proxy_backend = ""',
            "detect.proxy_backend",
            "The 'proxy_backend' parameter of \\[detect\\] must be",
        ),
        (
            ('proxy_backend = "hf[model=/nowhere]"', 'proxy_backed = "hf[model=/nowhere]"'),
            "proxy_backed",
            "detect.proxy_backed",
            "Unknown key 'proxy_backed'. Did you mean 'proxy_backend'",
        ),
        (
            ('proxy_backend = "hf[model=/nowhere]"', 'proxy_backend = "hff[model=/nowhere]"'),
            "proxy_backend",
            "detect.proxy_backend",
            "hff.*Did you mean 'hf'",
        ),
        (
            ('proxy_backend = "hf[model=/nowhere]"', 'proxy_backend = "mock"'),
            "proxy_backend",
            "detect.proxy_backend",
            "perplexity \\(through the proxy mock\\) needs token log-probabilities",
        ),
        (
            ("[detect]", '[backend]\nname = "mock"\n\n[detect]'),
            "proxy_backend",
            "detect.proxy_backend",
            "A proxy model reads answers the run did not generate",
        ),
    ],
)
def test_a_bad_detect_table_names_the_file_line_and_field(tmp_path, edit, needle, field, match):
    text = BASE.replace(*edit)
    assert text != BASE
    path = _write(tmp_path, text)
    with pytest.raises(InvalidInputError, match=match) as info:
        load_run_config(path)
    assert info.value.path == str(path)
    assert info.value.field == field
    assert info.value.line == next(
        i for i, line in enumerate(text.splitlines(), 1) if needle in line
    )
    assert f"{path}" in str(info.value) and f"line {info.value.line}" in str(info.value)


def test_without_a_detect_table_there_is_no_proxy(tmp_path):
    config = load_run_config(_write(tmp_path, BASE.replace(BASE[BASE.index("[detect]") :], "")))
    assert config.proxy is None
