import numpy as np
import pandas as pd
import pytest
from scipy import stats

from realitycheck import InvalidInputError, RunStore
from realitycheck.analysis import CALIBRATION, Bootstrap, choose_or_fix_threshold, split_of
from realitycheck.metrics import wilson_interval
from realitycheck.records import Example, Label, Response, Score
from realitycheck.store import RunData
from realitycheck.studies import studies
from realitycheck.studies.leaderboard import Leaderboard
from realitycheck.studies.leaderboard import _ranking as R

# -- statistics ---------------------------------------------------------------------------


def test_rank_rates_are_average_ranks_with_nan_left_out():
    rates = np.array([0.3, 0.1, 0.3, np.nan, 0.2])
    ranks = R.rank_rates(rates)
    np.testing.assert_array_equal(ranks[[0, 1, 2, 4]], stats.rankdata([0.3, 0.1, 0.3, 0.2]))
    assert np.isnan(ranks[3]) and ranks[0] == ranks[2] == 3.5
    assert R.describe_ties(["a", "b", "c", "d", "e"], rates) == "a = c (0.3)"


@pytest.mark.parametrize(
    ("judge", "generator"),
    [
        ("recorded:gpt_4o", "openai/gpt-4o"),
        ("recorded:gpt-3.5-turbo", "openai/GPT-3.5-Turbo"),
        ("llm_judge[model=openai/gpt-4o,temperature=0]", "openai/gpt-4o"),
        ("Llama_3.1 8B", "meta-llama/llama-3-1-8b"),
    ],
)
def test_judges_match_generators_after_normalisation(judge, generator):
    assert R.match_judges([judge], ["acme/other", generator]) == {judge: generator}


def test_unrelated_judges_do_not_match():
    generators = ["openai/gpt-4o", "openai/GPT-3.5-Turbo"]
    judges = ["recorded:gpt-4-turbo", "recorded:hhem-2.1", "rouge_l[threshold=0.3]"]
    assert R.match_judges(judges, generators) == {}


# A judge stands for its nested backend's model, whatever the order of its parameters.
TINY = "org/tiny_llama"
BASE_FIRST = "qa_judge[judge=openai[base_url=http://127.0.0.1:1/v1,model=org/Tiny-Llama]]"
MODEL_FIRST = "faithjudge[k=3,judge=openai[model=org/Tiny-Llama,base_url=http://127.0.0.1:1/v1]]"
PANEL = "panel[members=qa_judge[judge=openai[model=org/Tiny-Llama]]+rouge_l]"
MIXED = (
    "panel[members=qa_judge[judge=openai[model=org/Tiny-Llama]]+qa_judge[judge=openai[model=m]]]"
)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("faithjudge[judge=openai[model=gpt-4o]]", "gpt-4o"),
        ("faithjudge[judge=openai[base_url=http://127.0.0.1:8000/v1,model=gpt-4o]]", "gpt-4o"),
        ("faithjudge[judge=openai[model=gpt-4o,base_url=http://127.0.0.1:8000/v1]]", "gpt-4o"),
        (BASE_FIRST, "tiny-llama"),
        (MODEL_FIRST, "tiny-llama"),
        (PANEL, "tiny-llama"),
        (MIXED, ""),  # two models: no one of them
        ("p_true[backend=hf[model=/models/Tiny_Llama]]", "tiny-llama"),  # a former field name
        ('qa_judge[judge=openai[model="org/a,b"]]', "a,b"),  # quoted: the comma is the model's
        ("semantic_entropy[equivalence=llm,judge=vllm[model=/m/Qwen2.5-7B]]", "qwen2-5-7b"),
        ("openai[model=llama3.1:8b]", "llama3-1:8b"),  # an Ollama tag is part of the name
        ("llama3.1:8b", "llama3-1:8b"),
        ("recorded:gpt_4o", "gpt-4o"),
        ("qa_judge[judge=mock]", "qa-judge"),  # no model named: the component's name
        ("rouge_l[threshold=0.3]", "rouge-l"),
    ],
)
def test_a_judge_stands_for_the_model_of_its_nested_backend(key, expected):
    assert R.normalise_model_name(key) == expected


def test_a_real_judge_matches_the_generator_named_like_its_model():
    generators = ["acme/alpha", TINY]
    judges = [BASE_FIRST, MODEL_FIRST, PANEL, MIXED, "qa_judge[judge=mock]", "rouge_l"]
    assert R.match_judges(judges, generators) == {BASE_FIRST: TINY, MODEL_FIRST: TINY, PANEL: TINY}


def test_the_key_a_built_judge_writes_matches_too():
    from realitycheck import labelers

    built = labelers.create_from_key(MODEL_FIRST)
    assert built.key != MODEL_FIRST  # the key is written with its parameters sorted
    assert R.match_judges([built.key], ["acme/alpha", TINY]) == {built.key: TINY}


def test_self_preference_by_hand():
    # Own generator first: judge 0.1 vs human 0.4 (bias -0.3); others +0.1 and -0.1 (mean 0).
    bias_self, bias_others, pref = R.self_preference(
        np.array([0.1, 0.3, 0.5]), np.array([0.4, 0.2, 0.6]), 0
    )
    assert (bias_self, bias_others, pref) == pytest.approx((-0.3, 0.0, -0.3))


def test_self_preference_bootstrap_matches_a_loop_over_resampled_sources():
    rng = np.random.default_rng(3)
    n_sources, n_groups = 30, 4
    group = np.tile(np.arange(n_groups), n_sources)
    cluster = np.repeat(np.arange(n_sources), n_groups)
    human = rng.integers(0, 2, group.size).astype(float)
    judge = np.where(rng.random(group.size) < 0.8, human, 1 - human)
    low, high = R.cluster_bootstrap_self_preference(
        judge, human, group == 2, group, cluster, n_resamples=200, seed=5
    )
    draws = np.random.default_rng(5).integers(0, n_sources, (200, n_sources))
    values = []
    for draw in draws:
        rows = np.concatenate([np.flatnonzero(cluster == c) for c in draw])
        frame = pd.DataFrame({"g": group[rows], "j": judge[rows], "h": human[rows]})
        rates = frame.groupby("g")[["j", "h"]].mean().reindex(range(n_groups))
        values.append(R.self_preference(rates["j"].to_numpy(), rates["h"].to_numpy(), 2)[2])
    expected = np.quantile(values, [0.025, 0.975])
    assert (low, high) == pytest.approx(tuple(expected), abs=1e-12)


# -- the study on a hand-made run ---------------------------------------------------------

GENERATORS = ("openai/gpt-4o", "acme/alpha", "acme/beta")


def _toy_store(path):
    """Ten sources x three generators; human rates 0.4 / 0.2 / 0.6 (gpt-4o / alpha / beta)."""
    human = {"openai/gpt-4o": 4, "acme/alpha": 2, "acme/beta": 6}
    gpt = {"openai/gpt-4o": 1, "acme/alpha": 3, "acme/beta": 5}  # judge recorded:gpt_4o
    lex = {"openai/gpt-4o": 4, "acme/alpha": 4, "acme/beta": 6}  # ties gpt-4o and alpha
    examples, responses, labels, scores = [], [], [], []
    for i in range(10):
        examples.append(Example(example_id=f"toy/{i}", dataset="toy", task="summary"))
        for g in GENERATORS:
            rid = f"toy/{i}/{g}"
            text = "short one" if (g == "acme/alpha" and i < 3) else "a longer summary of six words"
            responses.append(Response(response_id=rid, example_id=f"toy/{i}", model=g, text=text))
            labels.append(Label(response_id=rid, labeler="human", hallucinated=i < human[g]))
            labels.append(Label(response_id=rid, labeler="lex", hallucinated=i < lex[g]))
            labels.append(Label(response_id=rid, labeler="flat", hallucinated=True))
            labels.append(Label(response_id=rid, labeler="copy", hallucinated=i < human[g]))
            scores.append(
                Score(response_id=rid, detector="recorded:gpt_4o", value=float(i < gpt[g]))
            )
            scores.append(Score(response_id=rid, detector="cont", value=i + 0.5 * (i < human[g])))
    store = RunStore(path)
    for records in (examples, responses, labels, scores):
        store.append(records)
    return RunData(store)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return _toy_store(tmp_path_factory.mktemp("toy"))


NAMED = ("recorded:gpt_4o", "cont")


def test_hand_made_leaderboard(toy):
    result = Leaderboard(detectors=NAMED).run(toy)
    board = result.table("leaderboard").set_index(["judge", "generator"])
    human = board.loc["human"]
    assert human["hallucination_rate"].to_dict() == pytest.approx(
        {"openai/gpt-4o": 0.4, "acme/alpha": 0.2, "acme/beta": 0.6}
    )
    assert human["rank"].to_dict() == {"acme/alpha": 1.0, "openai/gpt-4o": 2.0, "acme/beta": 3.0}
    # alpha's three refusals (two words) are its 3 hallucinated-by-lex items 0..2.
    assert board.loc[("lex", "acme/alpha"), "n_judged_answered"] == 7
    assert board.loc[("lex", "acme/alpha"), "hallucination_rate_answered"] == pytest.approx(1 / 7)
    lex = board.loc["lex"]
    assert lex.loc["openai/gpt-4o", "rank"] == lex.loc["acme/alpha", "rank"] == 1.5
    assert lex["tied"].to_dict() == {"openai/gpt-4o": True, "acme/alpha": True, "acme/beta": False}
    answers = result.table("answer_rate").set_index("generator")
    assert answers.loc["acme/alpha", ["n_refusals", "answer_rate"]].tolist() == [3, 0.7]
    assert answers.loc["acme/beta", "answer_rate"] == 1.0

    inv = result.table("inversions").set_index("judge")
    assert inv.loc["recorded:gpt_4o", "n_discordant"] == 1
    assert inv.loc["recorded:gpt_4o", "discordant_pairs"] == "alpha < gpt-4o"
    assert inv.loc["recorded:gpt_4o", "kendall_tau_b"] == pytest.approx(1 / 3)
    assert inv.loc["lex", ["n_discordant", "n_tied_pairs"]].tolist() == [0, 1]
    assert inv.loc["lex", "judge_ties"] == "alpha = gpt-4o (0.4)"
    assert inv.loc["lex", "kendall_tau_b"] == pytest.approx(
        stats.kendalltau([0.4, 0.2, 0.6], [0.4, 0.4, 0.6]).statistic
    )
    assert "calibration split" in inv.loc["cont", "threshold_rule"]
    assert "binary" in inv.loc["recorded:gpt_4o", "threshold_rule"]

    (row,) = result.table("self_preference").to_dict("records")
    assert row["judge"] == "recorded:gpt_4o" and row["generator"] == "openai/gpt-4o"
    assert (row["bias_self"], row["bias_others"], row["self_preference"]) == pytest.approx(
        (-0.3, 0.0, -0.3)
    )
    assert (row["judge_rank_self"], row["human_rank_self"]) == (1.0, 2.0)
    assert row["ci_low"] <= -0.3 <= row["ci_high"]
    assert "recorded:gpt_4o -30.0 points" in result.finding
    assert result.figures[0].png.startswith(b"\x89PNG")
    assert result.skipped == ("toy: judge copy left out, its verdicts equal human's",)
    assert np.isnan(inv.loc["flat", "kendall_tau_b"]) and inv.loc["flat", "n_tied_pairs"] == 3
    # cont's threshold splits sources, not generators: every generator gets the same rate.
    assert "flat, cont rate every generator the same (tau-b undefined)" in result.finding
    assert "Of the other 2 automatic judges, lex matches that ranking best" in result.finding
    assert "recorded:gpt_4o worst (tau-b 0.33, 1 inverted)" in result.finding


def test_real_judges_get_self_preference_rows(tmp_path):
    # Ten sources x three generators; human rates 0.4 / 0.2 / 0.6 (tiny / alpha / beta).
    human = {TINY: 4, "acme/alpha": 2, "acme/beta": 6}
    judged = {  # hallucinated counts per generator under each judge
        BASE_FIRST: {TINY: 1, "acme/alpha": 3, "acme/beta": 5},  # -0.3 vs 0 on others
        MODEL_FIRST: {TINY: 2, "acme/alpha": 2, "acme/beta": 6},  # -0.2 vs 0
        PANEL: {TINY: 3, "acme/alpha": 2, "acme/beta": 7},  # -0.1 vs +0.05
        MIXED: {TINY: 0, "acme/alpha": 2, "acme/beta": 6},  # two models: no row
        "qa_judge[judge=mock]": {TINY: 0, "acme/alpha": 1, "acme/beta": 6},  # no model
    }
    store = RunStore(tmp_path)
    examples, responses, labels = [], [], []
    for i in range(10):
        examples.append(Example(example_id=f"toy/{i}", dataset="toy", task="qa"))
        for g in human:
            rid = f"toy/{i}/{g}"
            text = "an answer of more than five words here"
            responses.append(Response(response_id=rid, example_id=f"toy/{i}", model=g, text=text))
            labels.append(Label(response_id=rid, labeler="human", hallucinated=i < human[g]))
            labels += [
                Label(response_id=rid, labeler=key, hallucinated=i < counts[g])
                for key, counts in judged.items()
            ]
    for records in (examples, responses, labels):
        store.append(records)
    result = Leaderboard().run(RunData(store))
    rows = result.table("self_preference").set_index("judge")
    assert set(rows.index) == {BASE_FIRST, MODEL_FIRST, PANEL}
    assert set(rows["generator"]) == {TINY}
    assert rows["self_preference"].to_dict() == pytest.approx(
        {BASE_FIRST: -0.3, MODEL_FIRST: -0.2, PANEL: -0.15}
    )
    assert rows.loc[PANEL, ["bias_self", "bias_others"]].tolist() == pytest.approx([-0.1, 0.05])
    assert f"{BASE_FIRST} -30.0 points" in result.finding


def test_intervals_follow_the_run_bootstrap(toy):
    boot = Bootstrap(n_resamples=300, confidence=0.8, seed=4)
    result = Leaderboard(detectors=NAMED).run(toy, bootstrap=boot)
    assert result.bootstrap == boot.as_dict()
    board = result.table("leaderboard").set_index(["judge", "generator"])
    row = board.loc[("human", "acme/alpha")]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(
        wilson_interval(row["n_hallucinated"], row["n_judged"], confidence=0.8)
    )
    (pref,) = result.table("self_preference").to_dict("records")
    (default,) = Leaderboard(detectors=NAMED).run(toy).table("self_preference").to_dict("records")
    assert pref["self_preference"] == default["self_preference"]
    assert pref["ci_high"] - pref["ci_low"] < default["ci_high"] - default["ci_low"]


def test_given_threshold_and_answered_ranking(toy):
    result = Leaderboard(detectors=NAMED, thresholds={"cont": 8.0}, rank_by="answered").run(toy)
    board = result.table("leaderboard").set_index(["judge", "generator"])
    # cont >= 8 only for sources 8 and 9 (every generator): rate 0.2 each.
    assert board.loc["cont", "threshold"].tolist() == [8.0, 8.0, 8.0]
    assert board.loc["cont", "hallucination_rate"].tolist() == pytest.approx([0.2, 0.2, 0.2])
    assert set(board.loc["cont", "threshold_rule"]) == {"given threshold"}
    # Ranked among answered: alpha's human rate is 0 / 7.
    assert board.loc[("human", "acme/alpha"), "ranked_rate"] == 0.0


def test_detectors_rank_only_when_named(toy):
    result = Leaderboard().run(toy)
    board = result.table("leaderboard")
    assert set(board["judge"]) == {"human", "lex", "flat"}
    assert "detector" not in set(board["judge_kind"])
    assert set(result.table("inversions")["judge"]) == {"lex", "flat"}
    assert result.table("self_preference").empty
    assert "cont" not in result.finding and "recorded:" not in result.finding


def test_named_detector_uses_a_calibration_split_threshold(toy):
    result = Leaderboard(detectors=("cont",)).run(toy)
    board = result.table("leaderboard").set_index(["judge", "generator"])
    frame = toy.frame("toy")
    split = split_of(list(frame["example_id"]), 0.5)
    cal = split == CALIBRATION
    y = toy.verdicts("toy")["human"].to_numpy()[cal].astype(int)
    s = toy.detector_scores("toy")["cont"].to_numpy()[cal]
    expected, _ = choose_or_fix_threshold(y, s, "f1_macro")
    assert set(board.loc["cont", "threshold"]) == {expected}
    assert set(board.loc["cont", "judge_kind"]) == {"detector"}
    assert "calibration split" in board.loc["cont", "threshold_rule"].iloc[0]


def test_a_labeler_as_reference_names_its_columns(toy):
    result = Leaderboard(reference="lex", detectors=NAMED).run(toy)
    for table in result.tables:
        assert not [c for c in table.frame.columns if "human" in c], table.name
        assert "human rate" not in table.caption
    board = result.table("leaderboard")
    assert {"lex_rate", "lex_rank"} <= set(board.columns)
    assert set(board.loc[board["judge_kind"] == "reference", "judge"]) == {"lex"}
    assert "lex_ties" in result.table("inversions").columns
    assert "lex_rank_self" in result.table("self_preference").columns
    assert result.finding.startswith("On toy, lex labels rank")
    assert "judge minus lex rate" in result.finding
    assert "under lex" in result.figures[0].caption


def test_one_generator_or_no_reference_is_skipped(tmp_path):
    store = RunStore(tmp_path)
    store.append([Example(example_id=f"{d}/0", dataset=d, task="qa") for d in ("one", "two")])
    store.append(
        [
            Response(response_id="one/r", example_id="one/0", model="m", text="t"),
            Response(response_id="two/a", example_id="two/0", model="a", text="t"),
            Response(response_id="two/b", example_id="two/0", model="b", text="t"),
        ]
    )
    store.append(
        [Label(response_id=r, labeler="lex", hallucinated=True) for r in ("two/a", "two/b")]
    )
    result = Leaderboard().run(RunData(store))
    assert result.skipped == (
        "one: one generator (m), nothing to rank",
        "two: no 'human' labels to rank against",
    )
    assert result.table("leaderboard").empty and "nothing was ranked" in result.finding


def test_key_round_trip_with_thresholds():
    study = studies.create_from_key("leaderboard[thresholds=recorded:hhem-2.1=0.5,refusal_words=3]")
    assert study.thresholds == ("recorded:hhem-2.1=0.5",) and study.refusal_words == 3
    assert studies.create_from_key(study.key) == study


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"refusal_words": -1}, "'refusal_words' parameter of leaderboard must be an int >= 0"),
        ({"refusal_words": True}, "'refusal_words' parameter"),
        (
            {"rank_by": "answer"},
            "'rank_by' parameter of leaderboard must be one of .* mean 'answered'",
        ),
        ({"objective": "auroc"}, "'objective' parameter"),
        ({"calibration_fraction": 0}, r"'calibration_fraction' parameter .* in \(0, 1\). Got 0"),
        ({"thresholds": ("hhem",)}, "'thresholds' parameter of leaderboard must be a finite"),
        ({"thresholds": {"hhem": "high"}}, "'thresholds' parameter"),
        ({"thresholds": "hhem=nan"}, "'thresholds' parameter"),
        ({"judges": ["a", ""]}, "'judges' parameter of leaderboard"),
    ],
)
def test_bad_options_are_refused(params, match):
    with pytest.raises(InvalidInputError, match=match):
        Leaderboard(**params)


# -- real data ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(real_run):
    data = real_run(ingested=("faithbench", "ragtruth"), detectors=("source_overlap",))
    hhem = ("recorded:hhem-2.1", "recorded:trueteacher")
    return data, Leaderboard(detectors=hhem).run(data)


def test_faithbench_summarizers_by_humans_recorded_judges_and_named_detectors(real):
    data, result = real
    board = result.table("leaderboard").query("dataset == 'faithbench' and slice == 'all'")
    human = board[board["judge"] == "human"].set_index("generator")["hallucination_rate"]
    frame = data.frame("faithbench").assign(h=data.verdicts("faithbench")["human"])
    expected = frame.groupby("model")["h"].mean()
    pd.testing.assert_series_equal(human.sort_index(), expected.sort_index(), check_names=False)
    inv = result.table("inversions").query("dataset == 'faithbench' and slice == 'all'")
    recorded = inv[inv["judge"].str.startswith("recorded:")].set_index("judge")
    assert len(recorded) == 5 and set(recorded["n_pairs"]) == {45}
    kinds = recorded["judge_kind"].to_dict()
    assert kinds == {
        "recorded:gpt-3.5-turbo": "labeler",
        "recorded:gpt-4-turbo": "labeler",
        "recorded:gpt_4o": "labeler",
        "recorded:hhem-2.1": "detector",
        "recorded:trueteacher": "detector",
    }
    assert "calibration split" in recorded.loc["recorded:hhem-2.1", "threshold_rule"]
    for judge, row in recorded.iterrows():
        part = board[board["judge"] == judge]
        tau = stats.kendalltau(part["human_rate"], part["ranked_rate"]).statistic
        assert row["kendall_tau_b"] == pytest.approx(tau)
        assert row["n_discordant"] == len(row["discordant_pairs"].split("; "))
    selfpref = result.table("self_preference").query("dataset == 'faithbench'")
    assert dict(zip(selfpref["judge"], selfpref["generator"], strict=True)) == {
        "recorded:gpt-3.5-turbo": "openai/GPT-3.5-Turbo",
        "recorded:gpt_4o": "openai/gpt-4o",
    }


def test_ragtruth_generators_per_task_and_overall(real):
    _, result = real
    board = result.table("leaderboard").query("dataset == 'ragtruth' and judge == 'human'")
    assert sorted(board["slice"].unique()) == [
        "all", "task=data2text", "task=rag_qa", "task=summary",
    ]  # fmt: skip
    assert board.groupby("slice")["generator"].nunique().eq(6).all()
    assert board.query("slice == 'all'")["n_judged"].sum() == 817 + 900 + 900
    assert board.query("slice == 'task=rag_qa'")["n_hallucinated"].sum() == 259
    assert {f.stem for f in result.figures} >= {"leaderboard_faithbench_all"}
