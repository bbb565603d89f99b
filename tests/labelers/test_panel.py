"""The panel labeler: each rule against a hand computation, ties, missing verdicts, Dawid-Skene.

Members with chosen verdicts are ``Voter`` labelers: each reads its verdict of
a response from ``response.meta["votes"][seat]`` (1, 0, ``None`` for no verdict,
``"retry"`` for a failure that may pass), registered for the test that uses
them only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score

from realitycheck import Example, Label, Response, RunStore, datasets, evaluate, label, labelers
from realitycheck.analysis import CALIBRATION, dawid_skene, split_of
from realitycheck.errors import InvalidInputError
from realitycheck.labelers import Labeler
from realitycheck.labelers.panel import Panel
from realitycheck.params import Interval, param

EXAMPLES = {
    f"ex/{i}": Example(example_id=f"ex/{i}", dataset="t", task="qa", question="q")
    for i in range(400)
}


@dataclass(frozen=True, kw_only=True)
class Voter(Labeler):
    """Says what ``response.meta["votes"][seat]`` says.

    Args:
        seat: Which vote of the response's ``meta["votes"]`` this member casts.
    """

    seat: int = param(0, Interval(int, 0))

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: Any = None,
    ) -> list[Label]:
        """Return the verdicts written in the responses' meta."""
        out = []
        for r in responses:
            vote = r.meta["votes"][self.seat]
            if vote == "retry":
                out.append(self._label(r, None, error="backend timed out", retryable=True))
            elif vote == "refused":
                out.append(self._label(r, None, error="HTTP 400: no such model", failed=True))
            elif vote is None:
                out.append(self._label(r, None, error="no reference"))
            else:
                out.append(self._label(r, bool(vote), score=float(vote)))
        return out


@pytest.fixture
def voters(monkeypatch):
    """Register ``Voter`` as the labeler ``test_voter`` for one test; return a maker of seats."""
    labelers.names()  # load the built-ins first
    monkeypatch.setattr(Voter, "name", "test_voter")
    monkeypatch.setattr(Voter, "family", "labelers")
    monkeypatch.setitem(labelers._items, "test_voter", Voter)
    return lambda k: tuple(Voter(seat=i) for i in range(k))


def _responses(votes: Sequence[Sequence[Any]], example_ids: Sequence[str] = ()) -> list[Response]:
    return [
        Response(
            response_id=f"r{i}",
            example_id=example_ids[i] if example_ids else f"ex/{i % 400}",
            model="m",
            text="x",
            meta={"votes": list(row)},
        )
        for i, row in enumerate(votes)
    ]


def _random_votes(seed: int, n: int, k: int) -> list[list[int | None]]:
    rng = np.random.default_rng(seed)
    cells = rng.choice(3, size=(n, k), p=[0.4, 0.4, 0.2])
    return [[None if c == 2 else int(c) for c in row] for row in cells]


def _by_hand(rule: str, row: Sequence[int | None]) -> bool | None:
    ones = sum(v == 1 for v in row)
    zeros = sum(v == 0 for v in row)
    if ones + zeros == 0:
        return None
    if rule == "majority":
        return ones >= zeros  # a tie counts as hallucinated
    if rule == "unanimous":
        return zeros == 0
    return ones > 0  # any


@pytest.mark.parametrize("rule", ["majority", "unanimous", "any"])
@pytest.mark.parametrize(("seed", "k"), [(0, 2), (1, 3), (2, 4), (3, 5), (4, 6)])
def test_each_rule_matches_a_hand_computation_on_random_votes(voters, rule, seed, k):
    votes = _random_votes(seed, 300, k)
    panel = Panel(members=voters(k), rule=rule)
    got = panel.label(_responses(votes), EXAMPLES)
    assert [lab.response_id for lab in got] == [f"r{i}" for i in range(300)]
    for lab, row in zip(got, votes, strict=True):
        ones, n = sum(v == 1 for v in row), sum(v is not None for v in row)
        assert lab.labeler == panel.key
        assert lab.hallucinated is _by_hand(rule, row), (row, lab)
        if n == 0:
            assert lab.score is None and lab.error.startswith("no member gave a verdict (")
            assert "test_voter: no reference" in lab.error
            assert lab.category == "" and not lab.retryable
        else:
            assert lab.score == pytest.approx(ones / n) and lab.category == f"{ones}/{n}"
            assert not lab.error
        raw = json.loads(lab.raw)
        assert raw["rule"] == rule
        assert [v["hallucinated"] for v in raw["votes"]] == [
            None if v is None else bool(v) for v in row
        ]
        assert [v["member"] for v in raw["votes"]] == [m.key for m in panel.members]


@pytest.mark.parametrize(
    ("row", "hallucinated", "category"),
    [
        ([1, 0], True, "1/2"),
        ([0, 1], True, "1/2"),
        ([1, 1, 0, 0], True, "2/4"),
        ([1, None, 0], True, "1/2"),
        ([0, 0, 1], False, "1/3"),
        ([1, 1, 0], True, "2/3"),
        ([None, 0, None], False, "0/1"),
    ],
)
def test_majority_counts_a_tie_as_hallucinated(voters, row, hallucinated, category):
    (lab,) = Panel(members=voters(len(row))).label(_responses([row]), EXAMPLES)
    assert (lab.hallucinated, lab.category) == (hallucinated, category)
    assert lab.score == pytest.approx(int(category[0]) / int(category[-1]))


def test_a_member_without_a_verdict_is_left_out_and_none_at_all_gives_an_error(voters):
    rows = [[None, None, None], [None, 1, None], [0, None, None]]
    got = Panel(members=voters(3), rule="unanimous").label(_responses(rows), EXAMPLES)
    assert got[0].hallucinated is None
    assert got[0].error == (
        "no member gave a verdict (test_voter: no reference; "
        "test_voter[seat=1]: no reference; test_voter[seat=2]: no reference)"
    )
    assert json.loads(got[0].raw)["votes"][0]["error"] == "no reference"
    assert (got[1].hallucinated, got[1].category) == (True, "1/1")
    assert (got[2].hallucinated, got[2].category) == (False, "0/1")


def test_a_member_failure_that_may_pass_makes_the_panel_label_retryable(voters):
    (lab,) = Panel(members=voters(3)).label(_responses([[1, "retry", 1]]), EXAMPLES)
    assert lab.hallucinated is None and lab.retryable
    assert "test_voter[seat=1]: backend timed out" in lab.error


def test_a_member_whose_call_failed_for_good_fails_the_panel_label(voters):
    # Two votes left would make a majority of 2 of 3: another panel, so no verdict.
    got = Panel(members=voters(3)).label(
        _responses([[1, "refused", 1], [0, "refused", "retry"], [1, None, 0]]), EXAMPLES
    )
    assert got[0].hallucinated is None and got[0].failed and not got[0].retryable
    assert "failed for good: test_voter[seat=1]: HTTP 400: no such model" in got[0].error
    assert got[1].failed and not got[1].retryable  # one fatal member: no retry helps alone
    assert (got[2].hallucinated, got[2].category, got[2].failed) == (True, "1/2", False)


def test_members_get_the_same_batch_and_the_run_cache(voters, monkeypatch):
    seen = []
    original = Voter.label

    def spy(self, responses, examples, *, cache=None):
        seen.append((self.seat, [r.response_id for r in responses], cache))
        return original(self, responses, examples, cache=cache)

    monkeypatch.setattr(Voter, "label", spy)
    cache = object()
    Panel(members=voters(3)).label(_responses([[1, 0, 1], [0, 0, 1]]), EXAMPLES, cache=cache)
    assert seen == [(i, ["r0", "r1"], cache) for i in range(3)]


def test_labels_are_joined_on_ids_and_a_member_that_skips_one_fails(voters, monkeypatch):
    original = Voter.label

    def reversed_labels(self, responses, examples, *, cache=None):
        return original(self, responses, examples, cache=cache)[::-1]

    monkeypatch.setattr(Voter, "label", reversed_labels)
    got = Panel(members=voters(2), rule="any").label(_responses([[1, 1], [0, 0]]), EXAMPLES)
    assert [(x.response_id, x.hallucinated) for x in got] == [("r0", True), ("r1", False)]

    monkeypatch.setattr(Voter, "label", lambda self, rs, ex, *, cache=None: [])
    with pytest.raises(InvalidInputError, match=r"returned 0 labels of 0 of the 2 responses"):
        Panel(members=voters(2)).label(_responses([[1, 1], [0, 0]]), EXAMPLES)


def _posterior_by_hand(row, prior, sensitivity, specificity):
    """Bayes' rule under a fitted two-class Dawid-Skene model, written out."""
    p1, p0 = prior, 1 - prior
    for v, sens, spec in zip(row, sensitivity, specificity, strict=True):
        if v is None or np.isnan(sens):
            continue
        p1 *= sens if v == 1 else 1 - sens
        p0 *= 1 - spec if v == 1 else spec
    return p1 / (p1 + p0)


@pytest.mark.parametrize("seed", [0, 1])
def test_dawid_skene_fits_on_the_calibration_split_and_labels_every_response(voters, seed):
    rng = np.random.default_rng(seed)
    n = 400
    truth = rng.random(n) < 0.4
    reliability = [(0.9, 0.85), (0.75, 0.9), (0.65, 0.6), (0.8, 0.7)]
    votes = []
    for t in truth:
        row: list[int | None] = []
        for sens, spec in reliability:
            says = rng.random() < sens if t else rng.random() >= spec
            row.append(None if rng.random() < 0.1 else int(says))
        votes.append(row)
    ids = [f"ex/{i}" for i in range(n)]
    panel = Panel(members=voters(4), rule="dawid_skene")
    got = panel.label(_responses(votes, ids), EXAMPLES)

    matrix = np.array([[np.nan if v is None else v for v in row] for row in votes], dtype=float)
    calibration = split_of(ids) == CALIBRATION
    assert 0 < calibration.sum() < n
    fit = dawid_skene(matrix[calibration])  # analysis' Dawid-Skene, called directly
    fitted = [lab for lab, c in zip(got, calibration, strict=True) if c]
    np.testing.assert_allclose([lab.score for lab in fitted], fit.posterior, rtol=1e-9)
    for lab, row in zip(got, votes, strict=True):
        expected = _posterior_by_hand(row, fit.prior, fit.sensitivity, fit.specificity)
        assert lab.score == pytest.approx(expected, rel=1e-6, abs=1e-9)
        assert lab.hallucinated is bool(expected >= 0.5)
        assert lab.category == f"{row.count(1)}/{4 - row.count(None)}"
    record = json.loads(got[0].raw)["fit"]
    assert record["on"] == "calibration" and record["n"] == int(calibration.sum())
    assert record["prior"] == pytest.approx(fit.prior)
    keys = [m.key for m in panel.members]
    assert record["sensitivity"] == pytest.approx(dict(zip(keys, fit.sensitivity, strict=True)))
    # The fit recovers who is reliable: the first member beats the third.
    assert record["sensitivity"][keys[0]] > record["sensitivity"][keys[2]]
    # It is better than the majority of the same votes against the truth.
    ds = np.array([lab.hallucinated for lab in got])
    majority = np.array([_by_hand("majority", row) for row in votes])
    assert (ds == truth).mean() >= (majority == truth).mean() - 0.02


@pytest.mark.parametrize(
    ("rows", "min_calibration", "why"),
    [
        ([[1, 0, 1], [0, 0, 1], [1, 1, 0]] * 10, 100, r"fewer than min_calibration=100"),
        ([[1, 1, 1]] * 60, 20, r"all got one verdict"),
    ],
)
def test_dawid_skene_falls_back_to_majority_with_a_note(voters, rows, min_calibration, why):
    panel = Panel(members=voters(3), rule="dawid_skene", min_calibration=min_calibration)
    got = panel.label(_responses(rows), EXAMPLES)
    majority = Panel(members=voters(3)).label(_responses(rows), EXAMPLES)
    assert [x.hallucinated for x in got] == [x.hallucinated for x in majority]
    assert [x.score for x in got] == [x.score for x in majority]
    assert re.search(why, json.loads(got[0].raw)["fit"]["fallback"])


def test_spec_and_key_round_trip_with_nested_members():
    panel = labelers.create_from_key(
        "panel[members=rouge_l[threshold=0.4]+token_f1+exact_match,rule=dawid_skene]"
    )
    assert [m.key for m in panel.members] == ["rouge_l[threshold=0.4]", "token_f1", "exact_match"]
    assert labelers.create_from_key(panel.key) == panel
    assert (
        panel.key == "panel[members=rouge_l[threshold=0.4]+token_f1+exact_match,rule=dawid_skene]"
    )
    spec = json.loads(panel.spec_json)
    assert spec["params"]["members"] == [m.spec for m in panel.members]
    assert labelers.create_from_spec(spec) == panel
    # A TOML table gives the members as tables.
    table = {"name": "panel", "params": {"members": [{"name": "bleu"}, "token_f1"]}}
    assert labelers.create_from_spec(table).key == "panel[members=bleu+token_f1]"
    # The default: three lexical labelers, and the bare name as key.
    assert labelers.create("panel").key == "panel"
    assert labelers.create_from_key("panel") == labelers.create("panel")


@pytest.mark.parametrize(
    ("key", "match"),
    [
        ("panel[members=rouge_l]", r"'members' parameter of panel must be a list of at least 2"),
        ("panel[members=rouge_l+rouge_l]", r"different labelers .*Repeated: rouge_l\."),
        ("panel[members=rouge_l+human]", r"human can only be read from a dataset"),
        ("panel[members=rouge_l+nope]", r"There is no labeler named 'nope'"),
        ("panel[rule=majorty]", r"Did you mean 'majority'\?"),
        ("panel[rule=dawid_skene,min_calibration=1]", r"'min_calibration' .* an int >= 2"),
    ],
)
def test_bad_panels_fail_before_any_work(key, match):
    with pytest.raises(InvalidInputError, match=match):
        labelers.create_from_key(key)


def test_a_real_run_lexical_panel_on_truthfulqa_through_label_and_evaluate(tmp_path, data_dir):
    bundle = datasets.create("truthfulqa", data_dir=data_dir).load()
    keep = {e.example_id for e in bundle.examples[:20]}
    responses = [r for r in bundle.responses if r.example_id in keep]
    ids = {r.response_id for r in responses}
    assert 300 <= len(responses) <= 1000
    store = RunStore(tmp_path / "run")
    store.append([e for e in bundle.examples if e.example_id in keep])
    store.append(responses)
    store.append([lab for lab in bundle.labels if lab.response_id in ids])
    majority = labelers.create_from_key("panel[members=rouge_l+token_f1+exact_match]")
    ds = labelers.create_from_key("panel[members=rouge_l+token_f1+exact_match,rule=dawid_skene]")
    report = label(store, [majority, ds, *majority.members])
    assert report.computed[majority.key] == len(responses)

    frame = store.frame("labels")
    wide = frame.pivot(index="response_id", columns="labeler", values="hallucinated")
    members = wide[[m.key for m in majority.members]].astype(float).to_numpy()
    ones, zeros = (members == 1).sum(axis=1), (members == 0).sum(axis=1)
    voted = ones + zeros > 0
    expected = ones[voted] >= zeros[voted]
    assert (wide.loc[voted, majority.key].astype(bool).to_numpy() == expected).all()
    assert wide.loc[~voted, majority.key].isna().all()

    fits = {
        json.dumps(json.loads(r)["fit"], sort_keys=True)
        for r in frame.loc[frame["labeler"] == ds.key, "raw"]
    }
    assert len(fits) == 1  # one batch, one fit
    (fit,) = map(json.loads, fits)
    by_id = {r.response_id: r.example_id for r in responses}
    calibration = split_of([by_id[i] for i in wide.index[voted]]) == CALIBRATION
    assert fit["on"] == "calibration" and fit["n"] == int(calibration.sum())

    agreement = evaluate(store).agreement
    rows = agreement[
        (agreement["labeler"] == majority.key)
        & (agreement["reference"] == "human")
        & (agreement["metric"] == "balanced_accuracy")
        & (agreement["slice"] == "all")
    ]
    (value,) = rows["value"]
    human = wide.loc[voted, "human"].astype(bool)
    assert value == pytest.approx(
        balanced_accuracy_score(human, wide.loc[voted, majority.key].astype(bool))
    )
    assert int(rows["n"].iloc[0]) == int(voted.sum())
    assert 0.5 < value < 1.0  # better than chance against the human labels


def test_a_panel_of_judges_round_trips_its_key_and_shares_the_call_cache(tmp_path, sent):
    from realitycheck.backends import CallCache
    from realitycheck.backends.mock import MockBackend
    from realitycheck.labelers.qa_judge import QAJudge

    strict = MockBackend(model="strict", reply='{"verdict": "incorrect"}')
    lenient = MockBackend(
        model="lenient",
        reply='{"verdict": "incorrect"}',
        replies=('answer to grade: "Paris"=>{{"verdict": "correct"}}',),
    )
    panel = Panel(
        members=(QAJudge(judge=strict), QAJudge(judge=lenient), labelers.create("exact_match"))
    )
    again = labelers.create_from_key(panel.key)
    assert again == panel and again.key == panel.key
    assert panel.key.startswith("panel[members=qa_judge[judge=mock[model=strict")
    spec = json.loads(panel.spec_json)
    assert spec["params"]["members"][1]["params"]["judge"]["params"]["model"] == "lenient"

    example = Example(
        example_id="q1",
        dataset="t",
        task="qa",
        question="Capital of France?",
        references=("Paris",),
    )
    responses = [
        Response(response_id=rid, example_id="q1", model="m", text=text)
        for rid, text in (("a", "Paris"), ("b", "Lyon"))
    ]
    with CallCache(tmp_path / "calls.sqlite") as cache:
        first = panel.label(responses, {"q1": example}, cache=cache)
        assert sum(sent) == 4  # two judges, two responses
        rerun = panel.label(responses, {"q1": example}, cache=cache)
    assert sum(sent) == 4  # the judges' calls came back from the run's cache
    assert first == rerun
    # Paris: strict says hallucinated, lenient and exact_match say not: 1/3. Lyon: 3/3.
    assert [(x.hallucinated, x.category) for x in first] == [(False, "1/3"), (True, "3/3")]
