"""`generate --variant 'paraphrase[...]'`: choose's paraphrase variant on free-form prompts.

The paraphraser is the public ``mock`` backend with a rule that rewords each
question; the answering model is another mock whose reply depends on which
wording it reads, so the prompt multiplicity study sees the two variants
disagree.
"""

import pytest
from _generation_fakes import CALLS, FakeBackend, make_examples

from realitycheck.backends.mock import MockBackend
from realitycheck.cli import main
from realitycheck.errors import InvalidInputError
from realitycheck.generation import GenerationPrompt, build_prompt, make_plan, variants
from realitycheck.generation._variants import PARAPHRASE_PROMPT
from realitycheck.labelers import labelers
from realitycheck.pipeline import generate, generation_errors, label
from realitycheck.records import Example, Response
from realitycheck.store import RunData, RunStore
from realitycheck.studies import studies

REWORD = (
    r"(?s)<question>\n.*thing number (\d+)\?\n</question>=>Which name does thing number {1} have?"
)
PARAPHRASER = MockBackend(replies=(REWORD,), reply="")
VARIANT = variants.create("paraphrase", backend=PARAPHRASER, temperature=0.0)
KEY = VARIANT.key


@pytest.fixture
def cache(tmp_path, monkeypatch):
    from realitycheck.backends import CallCache

    monkeypatch.setenv("REALITYCHECK_CACHE_DIR", str(tmp_path / "cache"))
    return CallCache(tmp_path / "calls.sqlite")  # the file of the call cache


@pytest.fixture
def paraphrased(monkeypatch) -> list[str]:
    """The questions sent to the paraphraser (a real call, not a cache hit), in order."""
    asked: list[str] = []
    original = MockBackend.generate

    def generate(self, requests):
        asked.extend(r.prompt for r in requests if r.prompt.startswith(PARAPHRASE_PROMPT))
        return original(self, requests)

    monkeypatch.setattr(MockBackend, "generate", generate)
    return asked


def test_the_question_is_paraphrased_stored_and_answered(tmp_path, cache, paraphrased):
    store = RunStore(tmp_path / "run")
    examples = make_examples(3)
    plan = make_plan("greedy", variants=["zero_shot", KEY])
    report = generate(store, examples, FakeBackend(), plan, cache=cache)
    assert report.computed == 6 and report.failed == 0 and not report.skipped
    assert len(paraphrased) == 3
    assert paraphrased[0] == VARIANT.request(examples[0].question).prompt  # choose's request
    by_id = {r.response_id: r for r in store.read(Response)}
    for i, example in enumerate(examples):
        rid = f"{example.example_id}/paraphrase-{_short(KEY)}/{report.generation}"
        response = by_id[rid]
        assert response.prompt_variant == KEY
        assert response.meta["paraphrase"] == f"Which name does thing number {i} have?"
        sent = next(r for r in CALLS if r.tag == f"{rid}#best")
        user = sent.messages[-1]["content"]
        assert user == f"<question>\nWhich name does thing number {i} have?\n</question>"
        plain = by_id[f"{example.example_id}/zero_shot/{report.generation}"]
        assert "paraphrase" not in plain.meta and plain.prompt_variant == "zero_shot"
    # The same request as a fresh zero-shot prompt of the paraphrased question.
    rebuilt = build_prompt(
        Example(
            example_id="x",
            dataset="toy",
            task="qa",
            question="Which name does thing number 0 have?",
        ),
        "zero_shot",
    )
    sent = next(
        r for r in CALLS if r.tag.startswith("toy/0/paraphrase-") and r.tag.endswith("#best")
    )
    assert sent.messages == rebuilt.messages()


def _short(key: str) -> str:
    import hashlib

    return hashlib.sha256(key.encode()).hexdigest()[:8]


def test_a_rerun_and_another_run_pay_for_no_paraphrase(tmp_path, cache, paraphrased):
    examples = make_examples(2)
    plan = make_plan("greedy", variants=[KEY])
    generate(RunStore(tmp_path / "a"), examples, FakeBackend(), plan, cache=cache)
    assert len(paraphrased) == 2
    again = generate(RunStore(tmp_path / "a"), examples, FakeBackend(), plan, cache=cache)
    assert again.computed == 0 and again.reused == 2 and len(paraphrased) == 2
    other = generate(RunStore(tmp_path / "b"), examples, FakeBackend(), plan, cache=cache)
    assert other.computed == 2 and len(paraphrased) == 2  # from the shared call cache
    assert other.usage.cached >= 2


def test_two_spellings_of_one_variant_are_one_variant(tmp_path):
    spelled = KEY[:-1] + ",seed=0]"  # the default seed written out
    assert variants.create_from_key(spelled).key == KEY
    plan = make_plan("greedy", variants=[KEY, spelled])
    with pytest.raises(InvalidInputError, match="are one variant"):
        generate(RunStore(tmp_path / "run"), make_examples(1), FakeBackend(), plan)


@pytest.mark.parametrize(
    ("variant", "match"),
    [
        ("shuffle_options[seed=1]", "varies multiple-choice prompts only"),
        ("paraphrase[backend=mok[reply=x]]", "Did you mean 'mock'"),
        ("paraphrase[backend=mock,sed=1]", "Did you mean 'seed'"),
        ("one_shot", "Item 0 is 'one_shot'"),
    ],
)
def test_a_variant_generate_cannot_use_is_refused_with_why(variant, match):
    with pytest.raises(InvalidInputError, match=match):
        make_plan("greedy", variants=[variant])


def test_a_task_without_a_question_fails_before_any_call(tmp_path):
    summary = make_examples(2, task="summary")
    plan = make_plan("greedy", variants=["zero_shot", KEY])
    with pytest.raises(InvalidInputError, match="example 'toy/0' has task 'summary'"):
        generate(RunStore(tmp_path / "run"), summary, FakeBackend(), plan)
    assert CALLS == []


def test_a_failed_paraphrase_is_a_generation_error_retried_next_time(tmp_path, cache):
    healthy = "paraphrase[backend=mock[reply=Reworded],temperature=0]"
    failing = "paraphrase[backend=mock[reply=Reworded,fail_on=thing number 1],temperature=0]"
    key = variants.create_from_key(healthy).key
    assert variants.create_from_key(failing).key == key  # fail_on is not part of the key
    store = RunStore(tmp_path / "run")
    examples = make_examples(3)
    report = generate(
        store, examples, FakeBackend(), make_plan("greedy", variants=[failing]), cache=cache
    )
    assert report.computed == 2 and report.failed == 1 and report.permanent == 1
    assert "the paraphrase failed" in report.errors[0]
    errors = generation_errors(store)
    assert errors["example_id"].tolist() == ["toy/1"]
    assert errors["prompt_variant"].tolist() == [key]
    again = generate(
        store, examples, FakeBackend(), make_plan("greedy", variants=[healthy]), cache=cache
    )
    assert again.computed == 1 and again.reused == 2 and generation_errors(store).empty
    assert {r.meta["paraphrase"] for r in store.read(Response)} == {"Reworded"}


def test_a_dialogue_opening_has_nothing_to_paraphrase_and_is_counted(tmp_path):
    turns = [
        Example(example_id="d/0", dataset="d", task="dialogue", context="K0.", question=""),
        Example(
            example_id="d/1",
            dataset="d",
            task="dialogue",
            context="K1.",
            question="thing number 1?",
        ),
    ]
    store = RunStore(tmp_path / "run")
    report = generate(store, turns, FakeBackend(), make_plan("greedy", variants=[KEY]))
    assert report.computed == 1 and report.failed == 0
    assert report.skipped == {KEY: {"questions": 1, "reason": report.skipped[KEY]["reason"]}}
    (response,) = store.read(Response)
    assert response.meta["paraphrase"] == "Which name does thing number 1 have?"
    sent = next(r for r in CALLS if r.tag.endswith("#best"))
    assert sent.messages[-1]["content"].endswith(
        "<message>\nWhich name does thing number 1 have?\n</message>"
    )
    manifest = store.read_manifest()["config"]["generation"][report.generation]
    assert manifest["skipped"][KEY]["questions"] == 1


def test_a_proxy_rebuilds_the_paraphrased_prompt(tmp_path):
    store = RunStore(tmp_path / "run")
    examples = make_examples(1)
    generate(store, examples, FakeBackend(), make_plan("greedy", variants=[KEY]))
    (response,) = store.read(Response)
    request = GenerationPrompt(FakeBackend())(examples[0], response, {})
    assert "Which name does thing number 0 have?" in request.messages[-1]["content"]


def test_prompt_multiplicity_compares_the_variants_of_a_generate_run(tmp_path):
    # The model answers right only when it reads the paraphrased wording.
    model = MockBackend(
        replies=(r"(?s)Which name does thing number (\d+) have=>Name{1}",), reply="No idea"
    )
    store = RunStore(tmp_path / "run")
    examples = make_examples(4)
    generate(store, examples, model, make_plan("greedy", variants=["zero_shot", KEY]))
    label(store, [labelers.create("exact_match")])
    study = studies.create_from_key("prompt_multiplicity[reference=exact_match]")
    result = study.run(RunData(store))
    summary = result.table("multiplicity")
    assert summary["default_variant"].tolist() == ["zero_shot"]
    assert summary["variants"].tolist() == [2] and summary["questions"].tolist() == [4]
    assert summary["default_accuracy"].tolist() == [0.0]
    assert summary["accuracy_mean"].tolist() == pytest.approx([0.5])
    questions = result.table("questions")
    assert questions["n_variants"].tolist() == [2] * 4
    assert questions["self_consistency"].tolist() == [0.0] * 4  # the two answers differ
    assert set(questions["category"]) == {"randomness"}


def test_the_cli_takes_a_paraphrase_variant(tmp_path, cache):
    run = tmp_path / "run"
    variant = "paraphrase[backend=mock[reply=Tell me the answer please],temperature=0]"
    args = ["generate", "-d", "nq_open", "--limit", "2", "-b", "mock[reply=Paris]"]
    args += ["--plan", "greedy", "--variant", "zero_shot", "--variant", variant, "--out", str(run)]
    assert main(["-q", *args]) == 0
    responses = RunStore(run).read(Response)
    assert sorted(r.prompt_variant for r in responses) == [variant] * 2 + ["zero_shot"] * 2
    para = [r for r in responses if r.prompt_variant == variant]
    assert {r.meta["paraphrase"] for r in para} == {"Tell me the answer please"}


def test_with_a_retriever_the_paraphrase_is_the_query(tmp_path, cache):
    import json

    corpus = tmp_path / "passages.jsonl"
    rows = [
        {"id": "t", "text": "Every thing has a name and a number."},
        {"id": "z", "text": "Zebras graze on the savanna at dawn."},
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    variant = "paraphrase[backend=mock[reply=Where do zebras graze at dawn?],temperature=0]"
    plan = make_plan(
        "greedy", variants=["zero_shot", variant], retriever=f"bm25[corpus={corpus},k=1]"
    )
    store = RunStore(tmp_path / "run")
    generate(store, make_examples(2), FakeBackend(), plan, cache=cache)
    found = {(r.example_id, r.prompt_variant): r.meta["passages"] for r in store.read(Response)}
    assert found == {
        ("toy/0", "zero_shot"): ["t"],
        ("toy/1", "zero_shot"): ["t"],
        ("toy/0", variant): ["z"],
        ("toy/1", variant): ["z"],
    }
