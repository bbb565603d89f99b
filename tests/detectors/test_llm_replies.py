"""LLM-backed detectors read each yes/no reply by its conclusion and count what they cannot read.

Every judge here is the public ``mock`` backend, scripted with reply rules
(``PATTERN=>REPLY``), so each comparison or check gets a chosen reply; a
reply longer than ``max_tokens`` is cut, with ``finish_reason="length"``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import pytest

from realitycheck import Example, Response, RunContext, RunStore, Score, detect
from realitycheck.backends import CallCache
from realitycheck.backends.mock import MockBackend
from realitycheck.detectors.self_evaluation import PTrue, Surprisal
from realitycheck.detectors.selfcheck import PAPER_UNCLEAR, SelfCheckPrompt, prompt_verdict_score
from realitycheck.detectors.semantic_entropy import SemanticEntropy
from realitycheck.errors import FatalBackendError, InvalidInputError, RetryableBackendError

EXAMPLES = {"e": Example(example_id="e", dataset="t", task="qa", question="Capital of France?")}
RUN = RunContext(examples=EXAMPLES)

READ_YES = ["Yes", "Yes.", "yes, they match", "YES"]
READ_NO = ["No", "no.", "Answer: no"]
UNREADABLE = [
    "I am not sure",
    "qz florp 17 ## kv",  # random tokens
    "",
    "Maybe.",
]
# Cut at the length limit before any conclusion (the judge's max_tokens is 4).
TRUNCATED = "Let me think about whether these two answers agree"


def _response(samples, rid="r", text="Paris."):
    return Response(response_id=rid, example_id="e", model="m", text=text, samples=samples)


def _entropy(classes):
    counts = [classes.count(c) for c in set(classes)]
    return -sum(n / len(classes) * math.log(n / len(classes)) for n in counts)


def _pair_rule(a: str, b: str, reply: str) -> str:
    """A mock rule answering ``reply`` when the judge is asked whether ``a`` entails ``b``."""
    return f"Answer A: {a}\nAnswer B: {b}\n=>{reply}"


def _entailment(rules=(), reply="No", **options) -> SemanticEntropy:
    judge = MockBackend(model="judge", reply=reply, replies=tuple(rules))
    return SemanticEntropy(equivalence="llm", judge=judge, **options)


# --- semantic_entropy[equivalence=llm] --------------------------------------------


@pytest.mark.parametrize("yes", READ_YES)
@pytest.mark.parametrize("no", READ_NO)
def test_yes_and_no_replies_are_read_by_their_conclusion(yes, no):
    # paris ~ paris city both ways; rome matches nothing.
    rules = [_pair_rule("paris city", "paris", yes), _pair_rule("paris", "paris city", yes)]
    det = _entailment(rules, reply=no)
    (score,) = det.score([_response(("paris", "paris city", "rome"))], RUN)
    assert score.error == "" and score.unreadable == 0
    assert score.value == pytest.approx(_entropy([0, 0, 1]))


@pytest.mark.parametrize("unclear", [*UNREADABLE, TRUNCATED])
def test_an_unreadable_reply_is_no_verdict_and_is_counted(unclear):
    det = _entailment(reply=unclear)
    (score,) = det.score([_response(("paris", "rome"))], RUN)
    # Both directions were asked; neither could be read: the classes are unknown.
    assert score.value is None and score.unreadable == 2
    assert not score.failed and not score.retryable
    assert "no verdict" in score.error and "2 of the 2 replies" in score.error
    assert repr(" ".join(unclear.split())[:10])[:-1] in score.error  # a quote of the reply


def test_the_real_server_symptom_every_reply_random_gives_no_value_not_log_k():
    # On a real server 918 such replies gave log 10 for every response, silently.
    samples = tuple(f"answer {i}" for i in range(10))
    det = _entailment(reply="florp zq zq")
    scores = det.score([_response(samples, rid=f"r{i}") for i in range(3)], RUN)
    assert all(s.value is None and s.unreadable == 2 for s in scores)
    assert all(s.value != pytest.approx(math.log(10)) for s in scores)


def test_an_unreadable_reply_that_decides_nothing_leaves_the_value_and_is_counted():
    # paris -> rome is "No", so whatever rome -> paris says, they differ.
    rules = [_pair_rule("rome", "paris", "No"), _pair_rule("paris", "rome", "I am not sure")]
    (score,) = _entailment(rules).score([_response(("paris", "rome"))], RUN)
    assert score.value == pytest.approx(math.log(2)) and score.unreadable == 1
    assert score.error == ""


def test_an_earlier_class_that_matches_makes_a_later_unreadable_pair_irrelevant():
    # "paris city" joins class 0 (paris) both ways; its unclear pair with rome is not needed.
    rules = [
        _pair_rule("paris city", "paris", "Yes"),
        _pair_rule("paris", "paris city", "Yes"),
        _pair_rule("paris city", "rome", "hmm"),
    ]
    (score,) = _entailment(rules).score([_response(("paris", "rome", "paris city"))], RUN)
    assert score.value == pytest.approx(_entropy([0, 1, 0])) and score.unreadable == 1


def test_unclear_as_false_is_the_papers_not_entailed_and_still_counts():
    det = _entailment(reply="I am not sure", unclear_as=False)
    assert det.key.endswith(",unclear_as=false]")
    (score,) = det.score([_response(("paris", "rome", "london"))], RUN)
    assert score.value == pytest.approx(math.log(3)) and score.unreadable == 6
    assert score.error == ""


def test_unclear_as_is_refused_without_an_llm_judge():
    with pytest.raises(InvalidInputError, match="'unclear_as' parameter of semantic_entropy"):
        SemanticEntropy(unclear_as=False)


@pytest.mark.parametrize("retryable", [True, False])
def test_a_failed_judge_call_is_a_failed_score(retryable):
    judge = (
        MockBackend(reply="Yes", fail_every=1)
        if retryable
        else MockBackend(reply="Yes", fail_on="Answer A")
    )
    det = SemanticEntropy(equivalence="llm", judge=judge)
    (score,) = det.score([_response(("paris", "rome"))], RUN)
    assert score.value is None and score.failed and score.retryable is retryable
    assert score.error.startswith("The entailment judge failed on 2 of 2 questions")


def test_counts_and_failures_are_stored_by_the_detect_stage(tmp_path):
    # rome -> paris is "No": decided whatever the other direction says; london is never read.
    det = _entailment([_pair_rule("rome", "paris", "No")], reply="unsure")
    store = RunStore(tmp_path / "run")
    store.append(list(EXAMPLES.values()))
    store.append(
        [
            _response(("paris", "rome"), rid="decided"),
            _response(("paris", "london"), rid="unknown"),
            _response(("paris", "paris"), rid="same"),
        ]
    )
    with CallCache(tmp_path / "calls.sqlite") as cache:
        detect(store, [det], cache=cache)
    stored = {s.response_id: s for s in RunStore(tmp_path / "run").read(Score)}
    assert (stored["decided"].value, stored["decided"].unreadable) == (
        pytest.approx(math.log(2)),
        1,
    )
    assert stored["unknown"].value is None and stored["unknown"].unreadable == 2
    assert "no verdict (" in stored["unknown"].error and "'unsure'" in stored["unknown"].error
    assert not stored["unknown"].failed
    assert (stored["same"].value, stored["same"].unreadable) == (0.0, 0)


# --- selfcheck_prompt -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "truncated", "expected"),
    [
        ("Yes", False, 0.0),
        ("Yes.", False, 0.0),
        ("yes, it does", False, 0.0),
        ("No", False, 1.0),
        ("NO.", False, 1.0),
        ("Answer: no", False, 1.0),
        ("Maybe", False, None),
        ("", False, None),
        ("I am not sure", False, None),
        ("yesterday", False, None),
        ("qz florp 17 ##", False, None),
        ("Let me check the passage", True, None),
    ],
)
def test_prompt_replies_map_to_sentence_scores(reply, truncated, expected):
    assert prompt_verdict_score(reply, truncated=truncated) == expected
    paper = PAPER_UNCLEAR if expected is None else expected
    assert prompt_verdict_score(reply, truncated=truncated, unclear_as=PAPER_UNCLEAR) == paper


def _checker(rules, reply, **options) -> SelfCheckPrompt:
    judge = MockBackend(model="checker", reply=reply, replies=tuple(rules))
    return SelfCheckPrompt(judge=judge, **options)


# Sentence 1 "Paris is the capital." against samples Paris / Lyon / Rome, sentence 2
# "It is big." likewise; every reply chosen by the sample and the sentence.
RULES = (
    "(?s)Passage: Lyon.*Sentence: It is big=>yes, it does",
    "(?s)Passage: Paris=>Yes.",
    "(?s)Passage: Lyon=>Answer: no",
)
RESPONSE = _response(("Paris", "Lyon", "Rome"), text="Paris is the capital. It is big.")


@pytest.mark.parametrize("unclear", [*UNREADABLE, TRUNCATED])
def test_selfcheck_prompt_leaves_unreadable_replies_out_and_counts_them(unclear):
    (score,) = _checker(RULES, unclear).score([RESPONSE], RunContext())
    # Sentence 1: yes 0, no 1 -> 0.5; sentence 2: yes 0, yes 0 -> 0; Rome unreadable twice.
    assert score.value == pytest.approx((0.5 + 0.0) / 2)
    assert score.unreadable == 2 and score.error == "" and not score.failed


@pytest.mark.parametrize("unclear", ["I am not sure", TRUNCATED])
def test_unclear_as_one_half_reproduces_the_paper_and_still_counts(unclear):
    det = _checker(RULES, unclear, unclear_as=0.5)
    assert det.key.endswith(",unclear_as=0.5]")
    (score,) = det.score([RESPONSE], RunContext())
    # The paper: sentence 1 (0 + 1 + 0.5) / 3, sentence 2 (0 + 0 + 0.5) / 3.
    assert score.value == pytest.approx((0.5 + 1 / 6) / 2)
    assert score.unreadable == 2


def test_a_sentence_no_reply_about_which_was_read_leaves_no_value():
    det = _checker(["(?s)Sentence: Paris=>No"], "I am not sure")
    (score,) = det.score([RESPONSE], RunContext())
    assert score.value is None and score.unreadable == 3 and not score.failed
    assert score.error.startswith("no reply about sentence 2 of 2 could be read")
    assert "'I am not sure'" in score.error and "3 of the 6 replies" in score.error


def test_every_reply_unreadable_is_no_value_not_one_half():
    # On a real server every response got 0.5 this way, silently.
    (score,) = _checker([], "florp zq").score([RESPONSE], RunContext())
    assert score.value is None and score.unreadable == 6
    (paper,) = _checker([], "florp zq", unclear_as=0.5).score([RESPONSE], RunContext())
    assert paper.value == 0.5 and paper.unreadable == 6


def test_unclear_as_must_be_a_score():
    with pytest.raises(InvalidInputError, match=r"'unclear_as' parameter of selfcheck_prompt"):
        _checker([], "Yes", unclear_as=2)


@pytest.mark.parametrize("retryable", [True, False])
def test_selfcheck_prompt_marks_a_failed_call_failed(retryable):
    judge = MockBackend(reply="Yes", fail_every=2) if retryable else MockBackend(fail_on="Lyon")
    (score,) = SelfCheckPrompt(judge=judge).score([RESPONSE], RunContext())
    assert score.value is None and score.failed and score.retryable is retryable
    assert score.error.startswith("the selfcheck_prompt judge failed on")


# --- p_true -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _IgnoresTopLogprobs(MockBackend):
    """The mock as a server that drops 'top_logprobs' and says so (Generation.unsupported)."""

    base_url: str = "http://127.0.0.1:8000/v1"

    def generate(self, requests):
        return [
            dataclasses.replace(g, top_logprobs=(), unsupported=("top_logprobs",))
            for g in super().generate(requests)
        ]


P_TRUE_EXAMPLES = {"e": Example(example_id="e", dataset="t", task="qa", question="Where?")}


def test_p_true_names_the_server_that_ignored_top_logprobs():
    judge = _IgnoresTopLogprobs(model="tiny-llama", reply="Yes")
    (score,) = PTrue(judge=judge).score([_response(())], RunContext(examples=P_TRUE_EXAMPLES))
    assert score.value is None and not score.failed and score.unreadable == 0
    assert score.error == (
        "the server http://127.0.0.1:8000/v1 (model tiny-llama) returned no next-token "
        "alternatives: it ignored the request field 'top_logprobs', so P(True) cannot be "
        "read from it"
    )


def test_p_true_without_alternatives_and_without_a_known_cause_quotes_the_reply():
    @dataclass(frozen=True, kw_only=True)
    class Bare(MockBackend):
        def generate(self, requests):
            return [dataclasses.replace(g, top_logprobs=()) for g in super().generate(requests)]

    (score,) = PTrue(judge=Bare(reply="Yes")).score(
        [_response(())], RunContext(examples=P_TRUE_EXAMPLES)
    )
    assert score.value is None and "returned no next-token alternatives" in score.error
    assert "'Yes'" in score.error and "ended at once" not in score.error
    (ended,) = PTrue(judge=MockBackend(reply="")).score(
        [_response(())], RunContext(examples=P_TRUE_EXAMPLES)
    )
    assert ended.value is None and ended.error.startswith("the reply ended at once")


@pytest.mark.parametrize("normalize", [False, True])
def test_p_true_with_neither_yes_nor_no_among_the_alternatives_is_unreadable(normalize):
    judge = MockBackend(reply="The")
    (score,) = PTrue(judge=judge, normalize=normalize).score(
        [_response(())], RunContext(examples=P_TRUE_EXAMPLES)
    )
    # Before, without normalize, this was P(True) = 0, a value of 1.0.
    assert score.value is None and score.unreadable == 1 and not score.failed
    assert score.error.startswith("neither yes nor no is among the top 20 alternatives")
    assert "'The'" in score.error


@pytest.mark.parametrize("retryable", [True, False])
def test_p_true_marks_a_failed_call_failed(retryable):
    judge = MockBackend(reply="Yes", fail_every=1) if retryable else MockBackend(fail_on="Where")
    (score,) = PTrue(judge=judge).score([_response(())], RunContext(examples=P_TRUE_EXAMPLES))
    assert score.value is None and score.failed and score.retryable is retryable
    assert score.error.startswith("the p_true judge failed on 1 of 1 calls")


@pytest.mark.parametrize("retryable", [True, False])
def test_surprisal_marks_a_failed_call_failed(monkeypatch, retryable):
    kind = RetryableBackendError if retryable else FatalBackendError

    def down(self, texts, *, layer=-1):
        raise kind("HTTP 503" if retryable else "HTTP 400")

    monkeypatch.setattr(MockBackend, "last_hidden", down)
    responses = [_response((), rid="a"), _response((), rid="b", text="")]
    scores = Surprisal(judge=MockBackend()).score(responses, RunContext(examples=P_TRUE_EXAMPLES))
    assert scores[0].value is None and scores[0].failed and scores[0].retryable is retryable
    # The empty response has its own reason, not the backend's failure.
    assert scores[1].error == "the response is empty" and not scores[1].failed


def test_a_longer_reply_limit_reads_a_judge_that_explains_first():
    explains = "Both name the same city.\nAnswer: yes"
    rules = [
        _pair_rule("paris city", "paris", explains),
        _pair_rule("paris", "paris city", explains),
    ]
    samples = ("paris", "paris city")
    (cut,) = _entailment(rules).score([_response(samples)], RUN)
    assert cut.value is None and cut.unreadable == 2 and "truncated" in cut.error
    det = _entailment(rules, max_tokens=32)
    assert det.key.endswith(",max_tokens=32]")
    (whole,) = det.score([_response(samples)], RUN)
    assert whole.value == 0.0 and whole.unreadable == 0


def test_max_tokens_is_refused_without_an_llm_judge():
    with pytest.raises(InvalidInputError, match="'max_tokens' parameter of semantic_entropy"):
        SemanticEntropy(max_tokens=8)
