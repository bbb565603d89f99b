"""Model names cut only at real path separators, and rank ranges where intervals overlap.

The short-name rule itself (:func:`realitycheck.text.short_names`) is tested in
tests/test_text.py."""

import itertools

import numpy as np
import pytest

from realitycheck import RunStore
from realitycheck.analysis import Bootstrap
from realitycheck.metrics import wilson_interval
from realitycheck.records import Example, Label, Response
from realitycheck.store import RunData
from realitycheck.studies.leaderboard import Leaderboard, rank_ranges
from realitycheck.studies.leaderboard import _ranking as R

SCRIPT = "<script>alert(1)</script> model"
BOLD = "org/<b>x</b>"
RLO = "acme/\u202egnp.exe"
LONG = "org/" + "very-long-model-name-" * 12 + "7b"

# -- names ---------------------------------------------------------------------------------


def test_normalised_names_drop_only_a_real_path_prefix():
    assert R.normalise_model_name(BOLD) == "<b>x</b>"  # was "b>"
    assert R.normalise_model_name(SCRIPT) == "<script>alert(1)</script>-model"
    judge = "recorded:<b>x</b>"
    assert R.match_judges([judge], ["acme/b>", BOLD]) == {judge: BOLD}


# -- rank ranges -----------------------------------------------------------------------------


def _ranges_by_brute_force(low, high):
    """Each rate's lowest and highest position over every order its intervals allow."""
    n = len(low)
    before = {(j, i) for i in range(n) for j in range(n) if high[j] < low[i]}
    best, worst = [n] * n, [1] * n
    for order in itertools.permutations(range(n)):
        position = {k: p + 1 for p, k in enumerate(order)}
        if all(position[j] < position[i] for j, i in before):
            for k in range(n):
                best[k], worst[k] = min(best[k], position[k]), max(worst[k], position[k])
    return best, worst


@pytest.mark.parametrize("seed", range(8))
def test_rank_ranges_are_every_rank_an_order_allowed_by_the_intervals_gives(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    centre = rng.random(n)
    width = rng.random(n) * 0.3
    low, high = centre - width, centre + width
    low[0], high[0] = high[1], high[1] + 0.1  # touching ends overlap
    best, worst = rank_ranges(low, high)
    assert (best.tolist(), worst.tolist()) == _ranges_by_brute_force(low, high)
    strict = R.rank_rates((low + high) / 2)  # a rate inside each interval
    assert ((best <= strict) & (strict <= worst)).all()


def test_rank_ranges_leave_out_rates_without_an_interval():
    best, worst = rank_ranges([0.1, np.nan, 0.5], [0.2, np.nan, 0.6])
    assert best[[0, 2]].tolist() == [1, 2] and worst[[0, 2]].tolist() == [1, 2]
    assert np.isnan(best[1]) and np.isnan(worst[1])


# -- the study: ranges in the board, tie groups and short names in the finding ----------------

RATES = {BOLD: 1, "acme/low": 3, "acme/mid-a": 12, "acme/mid-b": 13, SCRIPT: 30}
"""Hallucinated responses of 40 per generator: one clear leader, a tie group, one clear last."""


@pytest.fixture(scope="module")
def board_run(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("ranges"))
    examples, responses, labels = [], [], []
    for i in range(40):
        examples.append(Example(example_id=f"d/{i}", dataset="d", task="qa"))
        for g, bad in RATES.items():
            rid = f"d/{i}/{g}"
            refused = g == "acme/mid-a" and i >= 16  # answered: 12 of 16 hallucinated
            words = "short" if refused else "an answer of more than five words"
            responses.append(Response(response_id=rid, example_id=f"d/{i}", model=g, text=words))
            labels.append(Label(response_id=rid, labeler="human", hallucinated=i < bad))
    for records in (examples, responses, labels):
        store.append(records)
    return RunData(store)


@pytest.mark.parametrize("rank_by", ["all", "answered"])
def test_the_board_ranks_within_the_intervals_of_the_rate_ranked(board_run, rank_by):
    boot = Bootstrap(n_resamples=50, confidence=0.9)
    board = Leaderboard(rank_by=rank_by).run(board_run, bootstrap=boot).table("leaderboard")
    counts = ("n_hallucinated", "n_judged")
    if rank_by == "answered":
        counts = ("n_hallucinated_answered", "n_judged_answered")
    low, high = wilson_interval(board[counts[0]], board[counts[1]], confidence=0.9)
    best, worst = rank_ranges(low, high)
    assert board["rank_low"].tolist() == best.tolist()
    assert board["rank_high"].tolist() == worst.tolist()
    ends = zip(board["rank_low"], board["rank_high"], strict=True)
    ranges = dict(zip(board["generator"], ends, strict=True))
    assert ranges[BOLD] == ranges["acme/low"] == (1, 2)
    if rank_by == "all":
        assert ranges["acme/mid-a"] == ranges["acme/mid-b"] == (3, 4)
        assert ranges[SCRIPT] == (5, 5)
    else:  # mid-a's rate among its answers (75%) joins the last group
        assert ranges["acme/mid-b"] == (3, 3)
        assert ranges["acme/mid-a"] == ranges[SCRIPT] == (4, 5)


def test_the_finding_names_tie_groups_with_short_names(board_run):
    finding = Leaderboard().run(board_run).finding
    assert f"On d, human labels rank <b>x</b> lowest (2% hallucinated) and {SCRIPT} highest" in (
        finding
    )
    assert f"so 2 generators (<b>x</b>, low) could rank first and only {SCRIPT} last." in finding
    assert BOLD not in finding and " b>" not in finding


def _finding(tmp_path, n: int, bad_counts: dict[str, int]) -> str:
    """The leaderboard's finding on ``n`` questions of dataset ``d``, human-labelled.

    Each generator of ``bad_counts`` answers every question; its first
    ``bad_counts[generator]`` answers are labelled hallucinated.
    """
    store = RunStore(tmp_path)
    examples, responses, labels = [], [], []
    for i in range(n):
        examples.append(Example(example_id=f"d/{i}", dataset="d", task="qa"))
        for g, bad in bad_counts.items():
            rid = f"d/{i}/{g}"
            responses.append(Response(response_id=rid, example_id=f"d/{i}", model=g, text="t"))
            labels.append(Label(response_id=rid, labeler="human", hallucinated=i < bad))
    for records in (examples, responses, labels):
        store.append(records)
    return Leaderboard().run(RunData(store)).finding


def test_the_finding_says_when_every_rank_is_told_apart(tmp_path):
    finding = _finding(tmp_path, 200, {"org/a": 10, "org/b": 100, "org/c": 190})
    assert "rank a lowest (5% hallucinated) and c highest (95%) of 3 generators; their " in finding
    assert "Wilson intervals tell every rank apart." in finding


def test_the_finding_says_when_no_interval_is_clear_of_another(tmp_path):
    finding = _finding(tmp_path, 10, {"org/a": 3, "org/b": 4, "org/c": 5})
    assert (
        "of 3 generators; their Wilson intervals all overlap: the data do not order these 3 "
        in (finding)
    )
