"""`realitycheck run examples/faithdial_decodings_sizes.toml` end to end, on tiny models.

The example sweeps paper 001's five decodings over two model sizes of one
family on FaithDial. Here two random-weight Llamas of two sizes, built from a
config with the white-box tests' tokenizer, stand in for the example's two
folders (the example's [models] metadata is kept: the studies read it), and
the run answers the first 3 FaithDial turns. What is checked: every (model,
decoding, turn) has its reply, and the significance study (grouped by
decoding, then by size bin) and model_factors write their tables with those
factors. Replies are cut at 8 tokens instead of the example's 40: the
decoding loop costs per token, and what is checked does not depend on the
length (each turn's replies still differ by decoding, so the tests have
values to rank).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from realitycheck.cli import main
from realitycheck.records import Response
from realitycheck.runner import load_run_config
from realitycheck.store import RunStore, load_results

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

EXAMPLE = Path(__file__).parents[2] / "examples" / "faithdial_decodings_sizes.toml"
DECODINGS = {"greedy", "beam", "sampling", "top_k", "top_p"}
TURNS = 3
MAX_TOKENS = 8


@pytest.fixture(scope="module")
def two_sizes(tmp_path_factory) -> dict[str, Path]:
    """Two tiny random Llamas of one family, 2 layers x 32 and 4 layers x 64, saved and reloaded."""
    from tests.whitebox.conftest import build_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer()
    out = {}
    for name, layers, width in (("llama-small", 2, 32), ("llama-large", 4, 64)):
        config = LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=width,
            intermediate_size=2 * width,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=4096,  # FaithDial's knowledge, word by word
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            tie_word_embeddings=False,
        )
        torch.manual_seed(layers)
        folder = tmp_path_factory.mktemp(name)
        LlamaForCausalLM(config).eval().save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        out[f"models/{name}"] = folder
    return out


def _config(tmp_path: Path, two_sizes: dict[str, Path]) -> Path:
    """The example, its folders replaced by the tiny models, on 3 turns, on CPU, in tmp_path."""
    text = EXAMPLE.read_text(encoding="utf-8")
    for name, folder in two_sizes.items():
        assert text.count(f'"{name}"') == 2  # the backend and its [models] table
        text = text.replace(f'"{name}"', f'"{folder}"')
    text = re.sub(r"(?m)^limit = 100 ", f"limit = {TURNS} ", text)
    assert text.count("max_tokens = 40\n") == len(DECODINGS)
    text = text.replace("max_tokens = 40\n", f"max_tokens = {MAX_TOKENS}\n")
    text = text.replace('device = "auto"', 'device = "cpu"')
    text = text.replace(
        'out = "runs/faithdial_decodings_sizes"', 'out = "run"\ncache_dir = "cache"'
    )
    path = tmp_path / "decodings.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_example_parses_into_two_models_and_five_decodings():
    config = load_run_config(EXAMPLE)
    assert [b.name for b in config.backends] == ["hf", "hf"]
    assert {p.decoding for p in config.plans} == DECODINGS and config.plan is config.plans[0]
    assert all(p.n_samples == 0 for p in config.plans)
    sampled = [p for p in config.plans if p.decoding in {"sampling", "top_k", "top_p"}]
    assert {p.best_temperature for p in sampled} == {1.0}
    assert {p.top_k for p in sampled if p.decoding == "top_k"} == {40}
    assert {p.top_p for p in sampled if p.decoding == "top_p"} == {0.95}
    assert {p.num_beams for p in config.plans if p.decoding == "beam"} == {3}
    sizes = {name: info.size for name, info in config.models.items()}
    assert set(sizes) == {b.model for b in config.backends} and len(set(sizes.values())) == 2
    assert {info.family for info in config.models.values()} == {"llama"}


def test_the_example_runs_and_its_studies_test_decoding_and_size(tmp_path, two_sizes):
    assert main(["-q", "run", str(_config(tmp_path, two_sizes))]) == 0
    store = RunStore(tmp_path / "run")
    responses = store.read(Response)
    cells = {(r.model, r.decoding, r.example_id) for r in responses}
    assert len(responses) == len(cells) == 2 * len(DECODINGS) * TURNS
    assert {r.decoding for r in responses} == DECODINGS
    assert {r.model for r in responses} == {str(f) for f in two_sizes.values()}
    assert {r.prompt_variant for r in responses} == {"zero_shot"}

    results = {r.study: r for r in load_results(store)}
    by_decoding = _study(results, "significance[group=decoding,")
    groups = by_decoding.table("groups")
    assert set(groups["group"]) == DECODINGS
    assert set(groups["n"]) == {2 * TURNS}  # both models' replies to every turn
    (test,) = by_decoding.table("tests").itertuples()
    assert (test.grouping, test.design, test.n_groups, test.n_blocks) == (
        "decoding",
        "matched",
        len(DECODINGS),
        TURNS,
    )
    assert test.test in {"Friedman", "repeated-measures ANOVA"} and 0 <= test.p_value <= 1
    assert not by_decoding.table("posthoc").empty

    by_size = _study(results, "significance[group=size_bin,")
    assert set(by_size.table("groups")["group"]) == {"<3B", "3-10B"}  # from [models]
    (test,) = by_size.table("tests").itertuples()
    assert (test.grouping, test.design, test.n_groups) == ("size_bin", "matched", 2)
    assert 0 <= test.p_value <= 1

    factors = _study(results, "model_factors")
    models = factors.table("models")
    assert set(models["family"]) == {"llama"} and set(models["n"]) == {len(DECODINGS) * TURNS}
    assert models["rate"].between(0, 1).all()
    trend = factors.table("size_trend")
    assert trend["size"].tolist() == [1.24e9, 8.03e9]  # sorted by size, from the metadata
    assert set(trend["n_common"]) == {TURNS} and set(trend["n_models"]) == {2}


def _study(results: dict, prefix: str):
    (key,) = [k for k in results if k.startswith(prefix)]
    return results[key]
