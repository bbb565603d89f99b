"""Claim-wise grounding detectors (``unit=claims``): an LLM splits, a pair classifier checks.

The splitter is the mock backend scripted with a claim list per response; the
pair classifier is the mock's word-overlap stand-in for an NLI model (the
share of a hypothesis's distinct words found in the premise is its
P(entailment)). Each value is checked against seed paper 003's rule computed
here: the largest unsupported score over the response's claims.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from realitycheck import Example, InvalidInputError, Response, RunContext
from realitycheck.backends import CallCache, backends
from realitycheck.backends.mock import MockBackend
from realitycheck.claims import TASK_KINDS, read_split, split_prompt, split_request
from realitycheck.cli import main
from realitycheck.detectors import detectors
from realitycheck.labelers.claim_judge import ClaimJudge
from realitycheck.labelers.faithfulness_judge import source_fields

CLAIMWISE = ("nli_grounding", "cross_encoder", "claim_check")
SOURCE_SENTENCES = [
    "The tower was built in 1889 by a French company.",
    "It stands 330 metres tall on the bank of the river.",
    "Millions of visitors climb its stairs every year.",
    "The city lights it with golden lamps at night.",
]
SOURCE = " ".join(SOURCE_SENTENCES)
FOREIGN = ["purple", "volcano", "senator", "glacier", "1642", "violin", "desert", "copper"]
EXAMPLE = Example(example_id="e", dataset="t", task="summary", context=SOURCE)
EXAMPLES = {"e": EXAMPLE}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _overlap(premise: str, hypothesis: str) -> float:
    """The mock's P(entailment) written plainly: the share of the hypothesis's words found."""
    wanted = _words(hypothesis)
    return len(wanted & _words(premise)) / len(wanted) if wanted else 1.0


def _windows(text: str, window: int, stride: int) -> list[str]:
    tokens = text.split()
    if len(tokens) <= window:
        return [" ".join(tokens)]
    out = [" ".join(tokens[s : s + window]) for s in range(0, len(tokens) - window + 1, stride)]
    if not out[-1].endswith(tokens[-1]):
        out.append(" ".join(tokens[-window:]))
    return out


def _rule(marker: str, claims: list[str]) -> str:
    """A mock rule: the split prompt of a response starting with ``marker`` lists ``claims``."""
    return f'break into claims: "{marker}\\b=>{{{{"claims": {json.dumps(claims)}}}}}'


def _random_responses(seed: int) -> tuple[list[Response], dict[str, list[str]], list[str]]:
    """Return responses, the claims the splitter is scripted to give each, and the rules."""
    rng = np.random.default_rng(seed)
    vocabulary = sorted(_words(SOURCE))
    responses, claims, rules = [], {}, []
    for i in range(12):
        listed = []
        for _ in range(int(rng.integers(1, 5))):
            size = int(rng.integers(3, 7))
            pool = FOREIGN if rng.random() < 0.3 else vocabulary
            chosen = list(rng.choice(vocabulary, size=size))
            chosen[int(rng.integers(size))] = str(rng.choice(pool))
            listed.append(" ".join(chosen).capitalize() + ".")
        marker = f"Item{i}"
        responses.append(
            Response(
                response_id=f"r{i}", example_id="e", model="m", text=f"{marker}: {' '.join(listed)}"
            )
        )
        claims[f"r{i}"] = listed
        rules.append(_rule(marker, listed))
    return responses, claims, rules


def _premises(name: str) -> list[str]:
    if name == "nli_grounding":
        return SOURCE_SENTENCES
    return _windows(SOURCE, 9, 5)


def _detector(name: str, splitter, **params):
    windows = {} if name == "nli_grounding" else {"window": 9, "stride": 5}
    return detectors.create(
        name, judge="mock", unit="claims", splitter=splitter, **windows, **params
    )


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """Count the requests the mock backend is sent, call by call."""
    counts: list[int] = []
    original = MockBackend.generate

    def generate(self, requests):
        counts.append(len(requests))
        return original(self, requests)

    monkeypatch.setattr(MockBackend, "generate", generate)
    return counts


# --- the rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", CLAIMWISE)
def test_the_value_is_the_largest_unsupported_score_over_the_claims(name, seed):
    responses, claims, rules = _random_responses(seed)
    det = _detector(name, MockBackend(replies=rules))
    scores = det.score(responses, RunContext(examples=EXAMPLES))
    premises = _premises(name)
    assert len(premises) > 1
    expected = {
        rid: max(1 - max(_overlap(p, c) for p in premises) for c in listed)
        for rid, listed in claims.items()
    }
    assert [s.value for s in scores] == pytest.approx([expected[r.response_id] for r in responses])
    assert all(s.error == "" and s.unreadable == 0 and s.detector == det.key for s in scores)
    assert all(0 <= s.value <= 1 for s in scores)
    assert len({round(s.value, 6) for s in scores}) > 2
    # Order invariance: the same values whatever the order of the responses.
    again = det.score(responses[::-1], RunContext(examples=EXAMPLES))
    assert {s.response_id: s.value for s in again} == {s.response_id: s.value for s in scores}


def test_claims_not_sentences_are_checked():
    # One sentence that holds a supported and an unsupported fact: the sentence is half
    # supported; split into claims, the unsupported one decides.
    text = "The tower was built in 1889 and it is painted purple volcano senator."
    rules = [
        _rule(
            "The tower",
            ["The tower was built in 1889.", "The tower is painted purple volcano senator."],
        )
    ]
    response = Response(response_id="r", example_id="e", model="m", text=text)
    by_sentence = detectors.create("nli_grounding", judge="mock")
    by_claim = _detector("nli_grounding", MockBackend(replies=rules))
    (sentence,) = by_sentence.score([response], RunContext(examples=EXAMPLES))
    (claim,) = by_claim.score([response], RunContext(examples=EXAMPLES))
    worst = 1 - max(
        _overlap(s, "The tower is painted purple volcano senator.") for s in SOURCE_SENTENCES
    )
    assert claim.value == pytest.approx(worst)
    assert sentence.value == pytest.approx(1 - max(_overlap(s, text) for s in SOURCE_SENTENCES))
    assert claim.value > sentence.value


def test_a_response_without_claims_has_nothing_unsupported():
    splitter = MockBackend(replies=[_rule("I do not know", [])])
    response = Response(response_id="r", example_id="e", model="m", text="I do not know.")
    (score,) = _detector("claim_check", splitter).score([response], RunContext(examples=EXAMPLES))
    assert (score.value, score.error, score.unreadable) == (0.0, "", 0)


# --- unreadable splits and failures -----------------------------------------------------------


def test_an_unreadable_split_is_an_error_record_counted_never_sentences():
    long_list = '{{"claims": ["' + "word " * 1100 + '"]}}'
    splitter = MockBackend(
        replies=[
            'break into claims: "Garbled=>The claims are the tower and its height.',
            f'break into claims: "Long=>{long_list}',
            _rule("Fine", ["The tower was built in 1889."]),
        ]
    )
    texts = ["Garbled. The tower is tall.", "Long text here.", "Fine text."]
    responses = [
        Response(response_id=f"r{i}", example_id="e", model="m", text=t)
        for i, t in enumerate(texts)
    ]
    garbled, long, fine = _detector("claim_check", splitter).score(
        responses, RunContext(examples=EXAMPLES)
    )
    assert garbled.value is None and garbled.unreadable == 1 and not garbled.failed
    assert garbled.error.startswith("no claims in the reply of the splitter 'mock[replies=")
    assert "(no claim list): 'The claims are the tower" in garbled.error
    assert long.value is None and long.unreadable == 1 and "(truncated)" in long.error
    assert fine.value == pytest.approx(0.0) and fine.error == "" and fine.unreadable == 0


def test_a_failed_split_call_is_a_failure_retryable_when_it_may_pass():
    rules = [_rule("A", ["The tower was built in 1889."]), _rule("B", ["It stands tall."])]
    responses = [Response(response_id=r, example_id="e", model="m", text=f"{r} text") for r in "AB"]
    refused = _detector("cross_encoder", MockBackend(replies=rules, fail_on='claims: "B'))
    a, b = refused.score(responses, RunContext(examples=EXAMPLES))
    assert a.value is not None and a.error == ""
    assert b.value is None and b.failed and not b.retryable
    assert "failed on the claim split" in b.error and "400" in b.error
    flaky = _detector("cross_encoder", MockBackend(replies=rules, fail_every=2))
    a, b = flaky.score(responses, RunContext(examples=EXAMPLES))
    assert a.value is not None and b.value is None and b.retryable and "503" in b.error


def test_responses_that_cannot_be_split_are_not_sent():
    examples = {**EXAMPLES, "q": Example(example_id="q", dataset="t", task="qa", question="?")}
    responses = [
        Response(response_id="empty", example_id="e", model="m", text="  "),
        Response(response_id="nosource", example_id="q", model="m", text="Paris."),
        Response(response_id="missing", example_id="x", model="m", text="Paris."),
    ]
    splitter = MockBackend(fail_on=".")  # any request sent would fail
    scores = _detector("nli_grounding", splitter).score(responses, RunContext(examples=examples))
    assert [s.error for s in scores] == [
        "the response is empty",
        "the example has no context",
        "example 'x' was not given",
    ]


# --- one split, shared with claim_judge ------------------------------------------------------

SHARED_RULES = (
    _rule("Mixed", ["The tower was built in 1889.", "The tower is purple."]),
    _rule("Clean", ["The tower stands 330 metres tall."]),
    _rule("Nothing", []),
    'claims to check: \\["The tower was built in 1889.", "The tower is purple."\\]=>'
    '{{"verdicts": ["supported", "unsupported"]}}',
    'claims to check: \\["The tower stands 330 metres tall."\\]=>{{"verdicts": ["supported"]}}',
)
SHARED = [
    Response(response_id=r, example_id="e", model="m", text=f"{r} text.")
    for r in ("Mixed", "Clean", "Nothing")
]


@pytest.mark.parametrize("labeler_first", [True, False], ids=["labeler-first", "detector-first"])
def test_the_split_is_paid_once_for_claim_judge_and_the_detector(tmp_path, sent, labeler_first):
    llm = MockBackend(reply="no idea", replies=SHARED_RULES)
    judge = ClaimJudge(judge=llm)
    det = _detector("claim_check", llm)
    with CallCache(tmp_path / "calls.sqlite") as cache:

        def run_labeler():
            return judge.label(SHARED, EXAMPLES, cache=cache)

        def run_detector():
            return det.score(SHARED, RunContext(examples=EXAMPLES, cache=cache))

        if labeler_first:
            labels = run_labeler()
            assert sent == [3, 2]  # three splits, then two checks ("Nothing" has no claim)
            scores = run_detector()
            assert sent == [3, 2]  # every split came from the cache
        else:
            scores = run_detector()
            assert sent == [3]
            labels = run_labeler()
            assert sent == [3, 2]  # only the checks were sent
        usage = [json.loads(lab.raw)["usage"]["cached"] for lab in labels]
        assert usage == ([0, 0, 0] if labeler_first else [1, 1, 1])
    claims = {
        lab.response_id: [c["claim"] for c in json.loads(lab.raw)["claims"]] for lab in labels
    }
    premises = _premises("claim_check")
    for score in scores:
        listed = claims[score.response_id]
        expected = max((1 - max(_overlap(p, c) for p in premises) for c in listed), default=0.0)
        assert score.value == pytest.approx(expected)
    assert [lab.hallucinated for lab in labels] == [True, False, False]


@pytest.mark.parametrize(
    "backend",
    [
        "mock",
        "openai[model=gpt-4o-mini,base_url=http://127.0.0.1:9/v1]",
        "openai[model=gpt-4o-mini,base_url=http://127.0.0.1:9/v1,mode=completions]",
    ],
)
@pytest.mark.parametrize("task", [*TASK_KINDS, "qa"])
def test_the_detector_asks_the_split_request_of_claim_judge(backend, task):
    llm = backends.build(backend)
    example = Example(example_id="e", dataset="t", task=task, question="Q?", context=SOURCE)
    response = Response(response_id="r", example_id="e", model="m", text='He said "hi".\n')
    judge = ClaimJudge(judge=llm)
    (labeler_request,) = judge.requests(judge.prompt(response, example))
    detector_request = split_request(llm, split_prompt(task, response.text))
    assert detector_request == labeler_request
    # The task's description is the grounding judges' own.
    assert source_fields(response, example)["kind"] in split_prompt(task, response.text)


# --- specs and keys ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", CLAIMWISE)
def test_the_unit_is_in_the_key_and_the_spec_and_the_default_key_is_unchanged(name):
    default = detectors.create(name, judge="mock")
    claimwise = detectors.create(name, judge="mock", unit="claims", splitter="mock[model=llm]")
    assert default.key == f"{name}[judge=mock]"
    assert claimwise.key == f"{name}[judge=mock,splitter=mock[model=llm],unit=claims]"
    assert default.spec["params"]["unit"] == ("response" if name == "cross_encoder" else "sentence")
    assert default.spec["params"]["splitter"] is None
    assert claimwise.spec["params"]["splitter"] == claimwise.splitter.spec
    assert claimwise.spec != default.spec
    assert detectors.create_from_spec(claimwise.spec) == claimwise
    assert detectors.create_from_key(claimwise.key) == claimwise


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("claim_check[judge=mock,unit=claims]", r"'splitter' parameter of claim_check must be a b"),
        ("nli_grounding[judge=mock,splitter=mock]", r"nli_grounding must be left out unless unit="),
        ("cross_encoder[judge=mock,unit=sentence]", r"'unit' parameter of cross_encoder must be"),
        ("claim_check[judge=mock,unit=response]", r"'unit' parameter of claim_check must be one"),
    ],
)
def test_bad_units_and_splitters_are_refused_when_built(key, message):
    with pytest.raises(InvalidInputError, match=message):
        detectors.create_from_key(key)


def test_read_split_keeps_the_reply_and_says_why_there_is_no_list():
    from realitycheck.backends import Generation

    read = read_split(Generation(texts=('```json\n{"claims": [" A. ", ""]}\n```',)))
    assert (read.claims, read.reason) == (("A.",), "")
    cut = read_split(Generation(texts=('{"claims": ["A',), finish_reasons=("length",)))
    assert (cut.claims, cut.reason, cut.reply) == (None, "truncated", '{"claims": ["A')
    assert read_split(Generation(texts=("none",))).reason == "no claim list"


# --- the command line on real RAGTruth rows ---------------------------------------------------

# The split of a real response: its first two sentences (or its first stretch of text) as the
# claims; the captured text holds no quote or backslash, so it is valid inside the JSON reply.
REAL_RULES = (
    'break into claims: "(?P<a>[^"\\\\.]{3,}?\\.) (?P<b>[^"\\\\.]{3,}?\\.)=>'
    '{{"claims": ["{a}", "{b}"]}}',
    'break into claims: "(?P<a>[^"\\\\]{3,})=>{{"claims": ["{a}"]}}',
)


@pytest.fixture(scope="module")
def ragtruth_slice(data_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("ragtruth-slice")
    (root / "ragtruth").mkdir()
    lines = (data_dir / "ragtruth" / "qa.jsonl").read_text().splitlines(keepends=True)
    (root / "ragtruth" / "qa.jsonl").write_text("".join(lines[:2]))
    for unused in ("summary.jsonl", "data2txt.jsonl"):
        (root / "ragtruth" / unused).write_text("")
    return root


def test_detect_and_evaluate_claimwise_on_ragtruth_then_a_rerun_sends_no_split(
    tmp_path, ragtruth_slice, sent, capsys
):
    splitter = MockBackend(replies=REAL_RULES)
    claimwise = detectors.create(
        "claim_check", judge="mock", unit="claims", splitter=splitter, window=64, stride=48
    )
    sentencewise = detectors.create("claim_check", judge="mock", window=64, stride=48)
    keys = [claimwise.key, sentencewise.key]
    common = ["-d", "ragtruth[tasks=qa]", "--data-dir", str(ragtruth_slice)]
    cache = ["--cache-dir", str(tmp_path / "cache")]
    run = tmp_path / "run"
    args = [*common, *cache, "-D", ",".join(keys), "--n-resamples", "20", "--no-report"]
    assert main(["-q", "evaluate", *args, "--out", str(run)]) == 0
    n = sum(sent)
    assert n >= 10  # one split per response, sent once
    scores = pd.read_parquet(run / "scores.parquet")
    mine = scores[scores["detector"] == claimwise.key]
    assert len(mine) == n and mine["value"].notna().all() and (mine["error"] == "").all()
    assert mine["value"].between(0, 1).all()
    spec = json.loads(mine["spec"].iloc[0])
    assert spec["params"]["unit"] == "claims" and spec["params"]["splitter"]["name"] == "mock"
    other = scores[scores["detector"] == sentencewise.key]
    assert len(other) == n and not np.allclose(
        other["value"].sort_index(), mine["value"].sort_index()
    )
    metrics = pd.read_csv(run / "metrics.csv")
    auroc = metrics.query("labeler == 'human' and metric == 'auroc' and slice == 'all'")
    assert set(keys) <= set(auroc["detector"]) and (auroc["n"] == n).all()
    capsys.readouterr()

    again = tmp_path / "again"
    assert main(["-q", "detect", *common, *cache, "-D", claimwise.key, "--out", str(again)]) == 0
    assert sum(sent) == n  # a new run folder, the same cache: no split sent again
    rescored = pd.read_parquet(again / "scores.parquet").set_index("response_id")["value"]
    assert rescored.sort_index().tolist() == pytest.approx(
        mine.set_index("response_id")["value"].sort_index().tolist()
    )
