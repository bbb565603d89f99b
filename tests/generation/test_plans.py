import pytest
from _generation_fakes import FakeBackend, PlainBackend

from realitycheck.backends._cache import call_identity
from realitycheck.errors import InvalidInputError
from realitycheck.generation import SamplingPlan, build_prompt, make_plan
from realitycheck.generation._plans import prompt_seed
from realitycheck.records import Example

EXAMPLE = Example(
    example_id="e",
    dataset="d",
    task="qa",
    question="Who wrote Hamlet?",
    references=("Shakespeare",),
)
PROMPT = build_prompt(EXAMPLE, "zero_shot")
ALL = FakeBackend.capabilities
SEED = prompt_seed(0, PROMPT.text())  # the per-prompt seed of the default plan


def test_default_plan_is_ten_samples_at_one_and_a_best_answer_at_point_one():
    plan = SamplingPlan()
    assert plan.key == "plan"
    requests = plan.requests(PROMPT, task="qa", capabilities=ALL)
    best, (samples,) = requests.best, requests.samples
    assert (best.n, best.temperature, best.decoding, best.seed) == (1, 0.1, "sampling", SEED)
    assert (samples.n, samples.temperature, samples.decoding, samples.seed) == (
        10,
        1.0,
        "sampling",
        SEED + 1,
    )
    assert best.messages and not best.prompt  # chat when the backend takes it
    assert best.stop == () and best.max_tokens == 64
    assert best.logprobs and samples.logprobs  # the backend can, so the plan asks


def test_without_n_each_sample_is_its_own_request_with_a_distinct_seed():
    plan = SamplingPlan(n_samples=4)
    requests = plan.requests(PROMPT, task="qa", capabilities=PlainBackend.capabilities)
    assert [r.n for r in requests.samples] == [1, 1, 1, 1]
    assert [r.seed for r in requests.samples] == [SEED + 1, SEED + 2, SEED + 3, SEED + 4]
    identity = call_identity(PlainBackend())
    keys = {r.cache_key(identity) for r in requests.all()}
    assert len(keys) == 5  # the cache never folds samples together
    assert requests.best.prompt.endswith("Answer:") and requests.best.stop == ("\n",)
    assert not requests.best.logprobs


@pytest.mark.parametrize(
    ("decoding", "expected"),
    [
        ("greedy", {"temperature": 0.0, "num_beams": 1, "top_k": 0, "top_p": 1.0, "seed": None}),
        ("beam", {"temperature": 0.0, "num_beams": 3, "top_k": 0, "top_p": 1.0, "seed": None}),
        ("sampling", {"temperature": 0.1, "num_beams": 1, "top_k": 0, "top_p": 1.0, "seed": SEED}),
        ("top_k", {"temperature": 0.1, "num_beams": 1, "top_k": 40, "top_p": 1.0, "seed": SEED}),
        ("top_p", {"temperature": 0.1, "num_beams": 1, "top_k": 0, "top_p": 0.95, "seed": SEED}),
    ],
)
def test_decoding_strategies_map_to_request_fields(decoding, expected):
    best = (
        SamplingPlan(decoding=decoding, n_samples=0)
        .requests(PROMPT, task="qa", capabilities=ALL)
        .best
    )
    assert best.decoding == decoding
    assert {k: getattr(best, k) for k in expected} == expected


@pytest.mark.parametrize(
    ("sample_decoding", "top_k", "top_p"), [("top_k", 40, 1.0), ("top_p", 0, 0.95)]
)
def test_sample_decoding(sample_decoding, top_k, top_p):
    plan = SamplingPlan(sample_decoding=sample_decoding, n_samples=2)
    (samples,) = plan.requests(PROMPT, task="qa", capabilities=ALL).samples
    assert (samples.decoding, samples.top_k, samples.top_p) == (sample_decoding, top_k, top_p)


def test_task_defaults_and_explicit_settings():
    summary = Example(example_id="s", dataset="d", task="summary", context="Some text.")
    prompt = build_prompt(summary, "zero_shot")
    plan = SamplingPlan(n_samples=0, format="completion")
    assert plan.requests(prompt, task="summary", capabilities=ALL).best.max_tokens == 512
    plan = SamplingPlan(
        n_samples=0, max_tokens=7, stop=["END"], logprobs=False, hidden_layers=[2], top_logprobs=3
    )
    best = plan.requests(prompt, task="summary", capabilities=ALL).best
    assert (best.max_tokens, best.stop, best.logprobs) == (7, ("END",), False)
    assert (best.hidden_layers, best.top_logprobs) == ((2,), 3)


def test_presets_and_overrides():
    assert make_plan("greedy").n_samples == 0 and make_plan("greedy").decoding == "greedy"
    assert make_plan("beam").decoding == "beam"
    plan = make_plan("default[n_samples=5,temperature=0.7]", variants=["zero_shot", "few_shot"])
    assert plan.key == "plan[n_samples=5,temperature=0.7]"  # variants are not in the key
    assert plan.variants == ("zero_shot", "few_shot")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("defualt", "Did you mean 'default'"),
        ("default[temprature=0.5]", "Did you mean 'temperature'"),
        ("default[n_samples=-1]", "'n_samples' parameter of plan must be an int >= 0. Got -1"),
        ("default[temperature=0]", "must be > 0 when n_samples > 0"),
        ("default[decoding=nucleus]", "'decoding' parameter .* must be one of"),
        ("default[sample_decoding=greedy]", "'sample_decoding' parameter"),
        ("default[best_temperature=0]", "use decoding='greedy'"),
        ("default[top_p=1.5]", "'top_p' parameter .* in \\(0, 1\\]"),
        ("default[top_k=0]", "'top_k' parameter"),
        ("default[format=xml]", "'format' parameter"),
        ("default[variants=zero_shot+zero_shot]", "without repeats"),
        ("default[variants=two_shot]", r"'variants' .* each item one of \('zero_shot'"),
        ("default[stop=]", r"'stop' .* each item a str of at least one character"),
        ("default[hidden_layers=1.5]", r"'hidden_layers' parameter of plan must be a list"),
        ("default[seed=1.5]", "'seed' parameter"),
    ],
)
def test_bad_plans(text, match):
    with pytest.raises(InvalidInputError, match=match):
        make_plan(text)


@pytest.mark.parametrize(
    ("plan", "needs", "match"),
    [
        (SamplingPlan(decoding="beam"), {}, "needs beam, which the backend 'fake_plain'"),
        (SamplingPlan(hidden_layers=(1,)), {}, "needs hidden"),
        (SamplingPlan(format="chat"), {}, "needs chat"),
        (SamplingPlan(), {"eigenscore": {"samples", "hidden"}}, "eigenscore needs hidden"),
    ],
)
def test_capabilities_are_checked_before_any_call(plan, needs, match):
    with pytest.raises(InvalidInputError, match=match):
        plan.check(PlainBackend(), needs=needs)


@pytest.mark.parametrize(
    ("plan", "needs", "match"),
    [
        (SamplingPlan(n_samples=0), {"ln_entropy": {"samples", "logprobs"}}, "draws none"),
        (SamplingPlan(logprobs=False), {"perplexity": {"logprobs"}}, "logprobs = false"),
        (SamplingPlan(), {"logdet": {"hidden"}}, "set hidden_layers"),
    ],
)
def test_the_plan_must_ask_for_what_detectors_read(plan, needs, match):
    with pytest.raises(InvalidInputError, match=match):
        plan.check(FakeBackend(), needs=needs)
    SamplingPlan(hidden_layers=(2,)).check(FakeBackend(), needs={"x": {"samples", "hidden"}})


def test_the_package_exports_what_it_lists():
    import realitycheck.generation as generation

    assert list(generation.__all__) == sorted(generation.__all__)
    assert all(hasattr(generation, name) for name in generation.__all__)


def test_an_openai_backend_in_completions_mode_gets_raw_prompts():
    from realitycheck.backends.openai import OpenAIBackend
    from realitycheck.generation._plans import usable_capabilities

    chat = OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1")
    raw = OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1", mode="completions")
    plan = SamplingPlan()
    assert plan.requests(PROMPT, task="qa", capabilities=usable_capabilities(chat)).best.messages
    assert plan.requests(PROMPT, task="qa", capabilities=usable_capabilities(raw)).best.prompt
    with pytest.raises(InvalidInputError, match="needs chat"):
        SamplingPlan(format="chat").check(raw)


def test_each_prompt_gets_its_own_seeds_and_the_same_prompt_the_same():
    other = build_prompt(
        Example(example_id="q/2", dataset="t", task="qa", question="Who wrote Dune?"), "zero_shot"
    )
    plan = SamplingPlan(n_samples=3)
    first = plan.requests(PROMPT, task="qa", capabilities=ALL)
    again = plan.requests(PROMPT, task="qa", capabilities=ALL)
    second = plan.requests(other, task="qa", capabilities=ALL)
    assert first.best.seed == again.best.seed
    assert first.best.seed != second.best.seed
    assert SamplingPlan(seed=None).requests(PROMPT, task="qa", capabilities=ALL).best.seed is None
