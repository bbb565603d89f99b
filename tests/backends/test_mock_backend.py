"""The public ``mock`` backend: scripted replies, canned features, injected failures, dry runs."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from realitycheck.backends import CAPABILITIES, Generation, GenerationRequest, backends
from realitycheck.backends._cache import CallCache, cached_generate, call_identity
from realitycheck.backends.mock import HIDDEN_SIZE, LAYERS, MockBackend, prompt_text, tokenize
from realitycheck.errors import FatalBackendError, InvalidInputError

SAMPLED = {"decoding": "sampling", "temperature": 1.0}


def _ask(backend, **request):
    (generation,) = backend.generate([GenerationRequest(**request)])
    return generation


def test_registered_with_every_capability_and_a_key_that_rebuilds_it():
    assert backends.get("mock") is MockBackend
    assert MockBackend.capabilities == CAPABILITIES
    assert MockBackend().key == "mock" and MockBackend().reply == "mock reply"
    typed = "mock[logprob=-0.1+-2,replies=capital=>Paris+river=>Nile,reply=1889,sample_replies=a]"
    mock = backends.create_from_key(typed)
    assert mock.reply == "1889", "a number read from a key is the text typed"
    assert mock.replies == ("capital=>Paris", "river=>Nile") and mock.sample_replies == ("a",)
    assert mock.logprob == (-0.1, -2.0)
    assert backends.create_from_key(mock.key).spec == mock.spec
    from_toml = backends.create("mock", replies={"capital": "Paris", "river": "Nile"})
    assert from_toml.replies == mock.replies
    awkward = MockBackend(replies=(r"number (\d+),? [a-z]+=>A{1}",), sample_replies=("a, b", "c+d"))
    assert backends.create_from_key(awkward.key).spec == awkward.spec


def test_using_it_imports_no_model_library():
    code = (
        "import sys\n"
        "from realitycheck.backends import GenerationRequest, backends\n"
        "mock = backends.create_from_key('mock[reply=Paris]')\n"
        "mock.generate([GenerationRequest(prompt='q', logprobs=True, top_logprobs=2)])\n"
        "heavy = ('torch', 'transformers', 'vllm', 'openai', 'httpx')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_first_matching_rule_answers_with_its_groups():
    mock = MockBackend(
        reply="no idea",
        replies=(
            r"capital of (?P<country>\w+)=>the capital of {country}",
            r"(?s).*number (\d+)=>Answer{1}",
            r"whole (\w+)=>[{0}]",
            "capital=>never reached for 'capital of ...'",
            "braces=>{{literal}}",
        ),
    )
    assert _ask(mock, prompt="What is the capital of France?").texts == ("the capital of France",)
    few_shot = "Q: thing number 1?\nA: Answer1\nQ: thing number 22?\nA:"
    assert _ask(mock, prompt=few_shot).texts == ("Answer22",), "(?s).* finds the last one"
    assert _ask(mock, prompt="the whole match, please").texts == ("[whole match]",)
    assert _ask(mock, prompt="braces?").texts == ("{literal}",)
    assert _ask(mock, prompt="Who wrote Hamlet?").texts == ("no idea",)
    chat = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "capital"})
    assert prompt_text(GenerationRequest(messages=chat)) == "Be brief.\ncapital"
    assert _ask(mock, messages=chat).texts == ("never reached for 'capital of ...'",)


def test_the_reply_stops_at_a_stop_string_and_at_max_tokens():
    mock = MockBackend(reply="Paris is the capital.\nIt is in France.")
    g = _ask(mock, prompt="q", stop=("\n", " capital"), logprobs=True)
    assert g.texts == ("Paris is the",) and g.finish_reasons == ("stop",)
    assert g.tokens == (("Paris", " is", " the"),)
    g = _ask(mock, prompt="q", max_tokens=2)
    assert g.texts == ("Paris is",) and g.finish_reasons == ("length",)
    assert "".join(tokenize(" a  b\nc ")) == " a  b\nc" and tokenize("   ") == []
    assert g.usage == {"prompt_tokens": 1, "completion_tokens": 2}


@pytest.mark.parametrize("decoding", ["greedy", "beam"])
def test_greedy_and_beam_repeat_the_reply(decoding):
    mock = MockBackend(reply="Paris", sample_replies=("Lyon", "Nice"))
    g = _ask(mock, prompt="q", n=3, decoding=decoding, temperature=1.0, seed=5)
    assert g.texts == ("Paris",) * 3
    assert _ask(mock, prompt="q", n=2, decoding="sampling", temperature=0.0).texts == ("Paris",) * 2


def test_samples_cycle_by_sequence_seed_and_match_single_requests():
    options = ("Paris", "Lyon", "Nice")
    mock = MockBackend(reply="Paris", sample_replies=options)
    together = _ask(mock, prompt="q", n=5, seed=7, **SAMPLED)
    assert together.texts == tuple(options[(7 + i) % 3] for i in range(5))
    alone = [_ask(mock, prompt="q", n=1, seed=7 + i, **SAMPLED).texts[0] for i in range(5)]
    assert list(together.texts) == alone
    assert _ask(mock, prompt="q", n=5, seed=7, **SAMPLED) == together, "deterministic"
    assert _ask(mock, prompt="q", n=3, **SAMPLED).texts == options, "no seed: seed 0"
    no_options = MockBackend(reply="Paris")
    assert _ask(no_options, prompt="q", n=3, seed=1, **SAMPLED).texts == ("Paris",) * 3


@pytest.mark.parametrize("temperature", [0.1, 0.5])
def test_the_temperature_is_the_share_of_samples_that_leave_the_reply(temperature):
    mock = MockBackend(reply="Paris", sample_replies=("Lyon",))
    requests = [
        GenerationRequest(prompt=f"q{i}", decoding="top_p", temperature=temperature, seed=i)
        for i in range(4000)
    ]
    left = sum(g.texts == ("Lyon",) for g in mock.generate(requests)) / len(requests)
    assert abs(left - temperature) < 4 * math.sqrt(temperature * (1 - temperature) / 4000)


def _distribution(token: str, logprob: float, alternatives: int) -> dict[str, float]:
    """The mock's next-token distribution as documented, written out term by term."""
    p = math.exp(logprob)
    return {token: p, **{f"<alt{j}>": (1 - p) / 2**j for j in range(1, alternatives + 1)}}


def test_token_features_are_canned_and_consistent():
    mock = MockBackend(reply="a b c d e", logprob=(-0.1, -2.0))
    g = _ask(mock, prompt="q", n=2, logprobs=True, top_logprobs=3)
    assert g.token_logprobs == ((-0.1, -2.0, -0.1, -2.0, -0.1),) * 2
    assert len(g.token_entropies) == len(g.top_logprobs) == 2
    for lp, h, top, token in zip(
        g.token_logprobs[0], g.token_entropies[0], g.top_logprobs[0], g.tokens[0], strict=True
    ):
        full = _distribution(token, lp, 200)
        assert sum(full.values()) == pytest.approx(1.0)
        assert h == pytest.approx(-sum(q * math.log(q) for q in full.values() if q > 0))
        best = sorted(full.items(), key=lambda kv: -kv[1])[:3]
        assert top == pytest.approx({t: math.log(q) for t, q in best})
        assert list(top.values()) == sorted(top.values(), reverse=True)
    assert list(g.top_logprobs[0][1]) == ["<alt1>", "<alt2>", " b"], "p = 0.14 is third"
    assert g.token_entropies[0][1] > g.token_entropies[0][0] > 0, "less sure, more entropy"
    plain = _ask(mock, prompt="q")
    assert plain.texts == ("a b c d e",) and plain.finish_reasons == ("stop",)
    assert not (plain.tokens or plain.token_logprobs or plain.top_logprobs or plain.hidden)
    assert _ask(mock, prompt="q", top_logprobs=1).tokens == (tuple(tokenize("a b c d e")),)


def test_hidden_features_summarise_per_token_vectors_like_hf():
    mock = MockBackend(reply="a cat and a hat")
    g = _ask(mock, prompt="q", hidden_layers=(0, 2, LAYERS))
    (hidden,) = g.hidden
    assert set(hidden) == {f"{k}@L{layer}" for k in ("last", "mean", "sv") for layer in (0, 2, 32)}
    vectors = {}
    for token in tokenize(mock.reply):
        (one,) = _ask(MockBackend(reply=token), prompt="q", hidden_layers=(2,)).hidden
        vectors[token] = np.array(one["last@L2"])
    h = np.array([vectors[t] for t in g.tokens[0]])
    assert h.shape == (5, HIDDEN_SIZE) and np.all(np.abs(h) <= 1)
    assert g.tokens[0][3] == " a" and h[3] != pytest.approx(h[0]), "'a' and ' a' are two tokens"
    assert h[3] == pytest.approx(
        _ask(MockBackend(reply="x a"), prompt="q", hidden_layers=(2,)).hidden[0]["last@L2"]
    )
    assert np.array(hidden["last@L2"]) == pytest.approx(h[-1])
    assert np.array(hidden["mean@L2"]) == pytest.approx(h.mean(axis=0))
    centred = h - h.mean(axis=1, keepdims=True)
    assert np.array(hidden["sv@L2"]) == pytest.approx(np.linalg.svd(centred, compute_uv=False))
    assert list(hidden["sv@L2"]) == sorted(hidden["sv@L2"], reverse=True)
    assert hidden["last@L0"] != hidden["last@L2"], "each layer has its own states"
    empty = _ask(MockBackend(reply=""), prompt="q", hidden_layers=(1,))
    assert empty.texts == ("",) and empty.hidden == ({"last@L1": (), "mean@L1": (), "sv@L1": ()},)
    bad = _ask(mock, prompt="q", hidden_layers=(2, LAYERS + 1, -1))
    assert bad.error == "hidden layers [33, -1] are out of range 0..32 for the mock backend"
    assert not bad.texts


def test_failures_become_error_generations_retryable_or_fatal():
    mock = MockBackend(fail_every=3, fail_on="^secret")
    requests = [GenerationRequest(prompt=p) for p in ("a", "b", "c", "secret d", "e", "f")]
    out = mock.generate(requests)
    assert [bool(g.error) for g in out] == [False, False, True, True, False, True]
    assert out[2].error.startswith("RetryableBackendError: HTTP 503") and out[2].retryable
    assert out[3].error.startswith("FatalBackendError: HTTP 400") and not out[3].retryable
    assert "fail_on='^secret'" in out[3].error and not out[3].texts
    assert mock.key == "mock" and call_identity(mock) == call_identity(MockBackend())
    with pytest.raises(FatalBackendError, match="fail_on='\\^secret' matched"):
        mock.loglik([("secret", " x")])
    with pytest.raises(InvalidInputError, match="each item a GenerationRequest.*Item 1 is 'b'"):
        mock.generate([GenerationRequest(prompt="a"), "b"])


def test_loglik_is_the_sum_of_the_token_logprobs_a_generation_reports():
    mock = MockBackend(reply="Paris, France", logprob=(-0.25, -1.5))
    g = _ask(mock, prompt="Capital?", logprobs=True)
    assert mock.loglik([("Capital?", g.texts[0]), ("Capital?", ""), ("x", "a b c")]) == [
        pytest.approx(sum(g.token_logprobs[0])),
        0.0,
        pytest.approx(-0.25 - 1.5 - 0.25),
    ]
    with pytest.raises(InvalidInputError, match="each item a pair, each item a str.*Item 0"):
        mock.loglik(["ab"])


RULES = "The 'replies' parameter of mock must be a list of rules 'PATTERN=>REPLY'"


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"model": ""}, "The 'model' parameter of mock must be a non-empty str. Got '' instead"),
        ({"reply": None}, "The 'reply' parameter of mock must be a str. Got None instead"),
        ({"replies": "no rule"}, RULES + r".*Rule 0 \('no rule'\): it has no pattern before"),
        ({"replies": ["a=>b", "=>x"]}, r"Rule 1 \('=>x'\): it has no pattern before '=>'"),
        ({"replies": "(=>x"}, r"Rule 0 .*'\(' is not a regular expression \(missing \)"),
        ({"replies": r"(\d)=>{2}"}, r"names what its pattern lacks .* groups \{0\} to \{1\}\."),
        ({"replies": r"(\d)=>{}"}, r"its reply has \{\}: number the groups"),
        ({"replies": r"(?P<n>\d)=>{name}"}, r"KeyError: 'name'.*\{0\} to \{1\}, \{n\}\."),
        ({"replies": {"a=>b": "c"}}, "A pattern holds '=>'"),
        ({"sample_replies": [None]}, "'sample_replies' parameter of mock must be a list, each"),
        ({"logprob": 0}, r"'logprob' parameter of mock must be a float in \(-inf, 0\)"),
        ({"logprob": [-1, 0.5]}, "or a list of at least 2 items.*Item 1 is 0.5"),
        ({"logprob": []}, r"Got \[\] instead"),
        ({"logprob": True}, "Got True instead"),
        ({"logprob": -math.inf}, "Got -inf instead"),
        ({"fail_every": -1}, "The 'fail_every' parameter of mock must be an int >= 0. Got -1"),
        ({"fail_every": True}, "must be an int >= 0. Got True"),
        ({"fail_on": "("}, r"'fail_on' parameter of mock must be a regular expression \(a str\)"),
        ({"fail_on": 3}, r"must be a regular expression \(a str\). Got 3 instead"),
    ],
)
def test_bad_parameters_are_refused_when_built(params, match):
    with pytest.raises(InvalidInputError, match=match):
        MockBackend(**params)


def test_it_goes_through_the_call_cache_and_errors_are_not_cached(tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    requests = [GenerationRequest(prompt=f"q{i}", seed=i, **SAMPLED) for i in range(6)]
    flaky = MockBackend(reply="x", sample_replies=("s1", "s2"), fail_every=2)
    first = cached_generate(flaky, requests, cache=cache)
    assert [bool(g.error) for g in first] == [False, True] * 3 and len(cache) == 3
    healed = MockBackend(reply="x", sample_replies=("s1", "s2"))
    second = cached_generate(healed, requests, cache=cache)
    assert [g.cached for g in second] == [True, False] * 3 and len(cache) == 6
    assert second[0] == dataclasses.replace(first[0], cached=True)
    assert [g.texts for g in second] == [g.texts for g in healed.generate(requests)]


def test_the_generate_stage_feeds_every_white_box_detector(tmp_path):
    from realitycheck.detectors import RunContext, detectors
    from realitycheck.generation import SamplingPlan
    from realitycheck.pipeline import generate
    from realitycheck.records import Example, Response
    from realitycheck.store import RunStore

    examples = [
        Example(example_id=f"e{i}", dataset="toy", task="qa", question=f"Thing number {i}?")
        for i in range(4)
    ]
    mock = MockBackend(
        reply="I think it is Name",
        replies=(r"number 0\?=>Name0",),
        sample_replies=("Name0", "Name one", "a much longer and less sure answer"),
        logprob=(-0.2, -1.0, -3.0),
    )
    plan = SamplingPlan(n_samples=4, hidden_layers=(2,), top_logprobs=2)
    plan.check(mock, needs={"eigenscore": {"samples", "hidden"}, "ln_entropy": {"logprobs"}})
    store = RunStore(tmp_path / "run")
    report = generate(store, examples, mock, plan, cache=CallCache(tmp_path / "c.sqlite"))
    assert (report.computed, report.failed) == (4, 0)
    responses = {r.example_id: r for r in store.read(Response)}
    assert responses["e0"].text == "Name0" and responses["e0"].model == "mock"
    assert all(len(r.samples) == 4 for r in responses.values())
    names = ["perplexity", "mean_token_entropy", "ln_entropy", "eigenscore", "logdet", "erank"]
    for name in names:
        scores = detectors.create(name).score(list(responses.values()), RunContext())
        assert all(s.value is not None and math.isfinite(s.value) for s in scores), name
    # perplexity = exp(-mean canned logprob): the one-token answer is the most confident
    (low,) = detectors.create("perplexity").score([responses["e0"]], RunContext())
    assert low.value == pytest.approx(math.exp(0.2))
    (high,) = detectors.create("perplexity").score([responses["e1"]], RunContext())
    assert high.value == pytest.approx(math.exp((0.2 + 1.0 + 3.0 + 0.2 + 1.0) / 5))


def test_a_dry_run_from_the_command_line_and_from_a_study_file(tmp_path, data_dir, capsys):
    from realitycheck.cli import main
    from realitycheck.records import Response, Score
    from realitycheck.store import RunStore

    run = tmp_path / "dry"
    args = ["-q", "generate", "-d", "nq-open", "--data-dir", str(data_dir), "--limit", "3"]
    args += ["-b", "mock[reply=Paris]", "--plan", "greedy", "--no-cache", "--out", str(run)]
    assert main(args) == 0, capsys.readouterr().err
    responses = RunStore(run).read(Response)
    assert [r.text for r in responses] == ["Paris"] * 3
    assert {r.meta["backend"] for r in responses} == {"mock[reply=Paris]"}

    config = tmp_path / "dry.toml"
    config.write_text(
        textwrap.dedent(
            f"""\
            labelers = ["exact_match"]
            detectors = ["length", "perplexity", "ln_entropy", "eigenscore"]

            [run]
            out = "study"
            report = false
            cache = false
            data_dir = "{data_dir}"

            [[datasets]]
            name = "nq-open"
            limit = 4

            [backend]
            name = "mock"
            params = {{ reply = "Paris", sample_replies = ["Paris", "Lyon", "Paris, France"] }}

            [plan]
            n_samples = 3
            hidden_layers = [2]
            """
        )
    )
    assert main(["-q", "run", str(config)]) == 0, capsys.readouterr().err
    store = RunStore(tmp_path / "study")
    assert len(store.read(Response)) == 4
    scores = store.read(Score)
    assert len(scores) == 4 * 4 and all(s.value is not None for s in scores)


def test_a_generation_round_trips_through_json():
    g = _ask(MockBackend(), prompt="q", n=2, logprobs=True, top_logprobs=2, hidden_layers=(1,))
    assert Generation.from_json(g.to_json(), cached=False) == g


def test_a_generation_is_cached_as_the_json_of_all_its_fields_but_cached():
    # to_json writes the fields as they are (no deep copy first); the text must equal
    # what dataclasses.asdict gave, so answers cached before read back the same.
    import dataclasses
    import json

    g = _ask(MockBackend(), prompt="q", n=2, logprobs=True, top_logprobs=2, hidden_layers=(1,))
    g = dataclasses.replace(
        g,
        usage={"calls": 1, "attempts": 2},
        error="partly",
        unsupported=("n",),
        cached=True,
    )
    assert g.tokens and g.token_logprobs and g.top_logprobs and g.hidden
    deep = dataclasses.asdict(g)
    deep.pop("cached")
    assert g.to_json() == json.dumps(deep, default=lambda o: dict(o))
    assert "cached" not in json.loads(g.to_json())
    assert Generation.from_json(g.to_json(), cached=True) == g
