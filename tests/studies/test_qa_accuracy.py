import numpy as np
import pandas as pd
import pytest

from realitycheck import InvalidInputError, RunStore
from realitycheck.analysis import Bootstrap
from realitycheck.records import Example, Label, Response
from realitycheck.store import RunData
from realitycheck.studies import studies
from realitycheck.studies.qa_accuracy import QaAccuracy, paired_difference_ci

# -- the paired difference ----------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_paired_difference_matches_an_item_bootstrap(seed):
    rng = np.random.default_rng(seed)
    a = rng.random(300) < 0.6
    b = np.where(rng.random(300) < 0.7, a, rng.random(300) < 0.4)
    diff, low, high = paired_difference_ci(a, b, n_resamples=4000, seed=seed)
    assert diff == pytest.approx(a.mean() - b.mean(), abs=1e-12)
    draws = rng.integers(0, a.size, (4000, a.size))
    loop = a[draws].mean(axis=1) - b[draws].mean(axis=1)
    expected = np.quantile(loop, [0.025, 0.975])
    # Two independent bootstraps of the same statistic: quantiles agree to Monte Carlo error.
    assert (low, high) == pytest.approx(tuple(expected), abs=0.012)
    assert low < diff < high


def test_paired_difference_edge_cases():
    same = np.array([True, False, True])
    assert paired_difference_ci(same, same) == (0.0, 0.0, 0.0)
    assert all(np.isnan(paired_difference_ci(np.array([], bool), np.array([], bool))))


# -- the study on a hand-made run ---------------------------------------------------------


def _toy(path, models=("m/a", "m/b")):
    """Two generators x two prompts x 10 questions; some short answers and 'refuse' labels."""
    store = RunStore(path)
    examples = [
        Example(example_id=f"q/{i}", dataset="toy", task="qa", question="?", references=("x",))
        for i in range(10)
    ]
    responses, labels = [], []
    for i in range(10):
        for model in models:
            for prompt in ("zero-shot", "few-shot"):
                rid = f"q/{i}/{model}/{prompt}"
                text = "I have no comment at all here." if i == 0 else "Paris."
                if i in (1, 2) and model == models[0]:
                    text = "The answer is probably a long sentence here."
                responses.append(
                    Response(
                        response_id=rid,
                        example_id=f"q/{i}",
                        model=model,
                        text=text,
                        prompt_variant=prompt,
                    )
                )
                wrong = i < (3 if model == models[0] else 6)
                labels.append(Label(response_id=rid, labeler="human", hallucinated=wrong))
                auto = wrong and i != 1  # the automatic labeler accepts item 1
                category = "refuse" if i == 0 else ""
                labels.append(
                    Label(response_id=rid, labeler="judge", hallucinated=auto, category=category)
                )
    for records in (examples, responses, labels):
        store.append(records)
    return RunData(store)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return _toy(tmp_path_factory.mktemp("toy"))


def test_hand_made_accuracy_table(toy):
    proportion_confint = pytest.importorskip("statsmodels.stats.proportion").proportion_confint
    result = QaAccuracy(refusal_words=5, refusal_phrases=("no comment",)).run(toy)
    table = result.table("qa_accuracy").set_index(["generator", "prompt_variant", "labeler"])
    assert len(table) == 2 * 2 * 2
    a = table.loc[("m/a", "zero-shot", "human")]
    # Item 0 has a refusal phrase; items 3..9 say "Paris." (one word); items 1, 2 are long.
    assert a["n_responses"] == 10 and a["n_refusals"] == 8
    assert (a["n_judged"], a["n_correct"], a["accuracy"]) == (10, 7, 0.7)
    low, high = proportion_confint(7, 10, alpha=0.05, method="wilson")
    assert (a["ci_low"], a["ci_high"]) == pytest.approx((low, high))
    assert a["n_refuse_category"] == 0 and np.isnan(a["accuracy_difference"])
    j = table.loc[("m/a", "zero-shot", "judge")]
    assert j["n_refuse_category"] == 1 and j["accuracy"] == pytest.approx(0.8)
    assert j["n_paired"] == 10 and j["reference_accuracy"] == pytest.approx(0.7)
    assert j["accuracy_difference"] == pytest.approx(0.1)
    assert j["difference_ci_low"] <= 0.1 <= j["difference_ci_high"]
    b = table.loc[("m/b", "few-shot", "judge")]
    assert b["accuracy"] == pytest.approx(0.5) and b["accuracy_difference"] == pytest.approx(0.1)
    wide = result.table("qa_accuracy_wide")
    assert list(wide.columns[-2:]) == ["accuracy human", "accuracy judge"] and len(wide) == 4
    assert "judge +10.0 points" in result.finding
    assert result.figures[0].png.startswith(b"\x89PNG")


SCRIPT, BOLD = "<script>alert(1)</script> model", "org/<b>x</b>"


def test_hostile_generator_names_stay_whole_in_the_figure_and_finding(tmp_path, monkeypatch):
    """One short-name rule (text.short_names): cut only at a real path separator."""
    import realitycheck.studies.qa_accuracy as module

    rows = []
    original = module.dot_plot
    monkeypatch.setattr(
        module, "dot_plot", lambda r, *a, **k: rows.append(r) or original(r, *a, **k)
    )
    result = QaAccuracy().run(_toy(tmp_path, models=(SCRIPT, BOLD)))
    # The figure's rows: generator / prompt, the generator by its short name.
    shown = {row.rsplit(" / ", 1)[0] for row in rows[0]}
    assert shown == {SCRIPT, "<b>x</b>"}  # cut at every "/": "script> model" and "b>"
    assert f"({SCRIPT})" in result.finding and f"({BOLD})" in result.finding


def test_intervals_follow_the_run_bootstrap(toy):
    proportion_confint = pytest.importorskip("statsmodels.stats.proportion").proportion_confint
    boot = Bootstrap(n_resamples=500, confidence=0.8, seed=9)
    result = QaAccuracy().run(toy, bootstrap=boot)
    table = result.table("qa_accuracy").set_index(["generator", "prompt_variant", "labeler"])
    a = table.loc[("m/a", "zero-shot", "human")]
    low, high = proportion_confint(7, 10, alpha=0.2, method="wilson")
    assert (a["ci_low"], a["ci_high"]) == pytest.approx((low, high))
    j = table.loc[("m/a", "zero-shot", "judge")]
    judge = np.array([i < 3 and i != 1 for i in range(10)])
    human = np.arange(10) < 3
    expected = paired_difference_ci(~judge, ~human, n_resamples=500, confidence=0.8, seed=9)
    assert (j["difference_ci_low"], j["difference_ci_high"]) == pytest.approx(expected[1:])


def test_only_the_chosen_labelers_and_the_length_rule(toy):
    result = QaAccuracy(labelers=("judge",), refusal_words=0, refusal_phrases=()).run(toy)
    table = result.table("qa_accuracy")
    assert set(table["labeler"]) == {"judge"} and table["n_refusals"].eq(0).all()
    assert table["accuracy_difference"].isna().all()


def test_a_dataset_without_qa_is_skipped(tmp_path):
    store = RunStore(tmp_path)
    store.append([Example(example_id="s/0", dataset="summ", task="summary")])
    store.append([Response(response_id="r", example_id="s/0", model="m", text="t")])
    store.append([Label(response_id="r", labeler="human", hallucinated=False)])
    result = QaAccuracy().run(RunData(store))
    assert result.tables[0].frame.empty
    assert result.skipped == ("summ: no QA examples (task qa / rag_qa) and no references",)
    assert "nothing was tabulated" in result.finding


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"refusal_words": -2}, "'refusal_words' parameter of qa_accuracy must be an int >= 0"),
        ({"refusal_phrases": ("",)}, "'refusal_phrases' parameter of qa_accuracy"),
        ({"refusal_phrases": None}, "'refusal_phrases' parameter of qa_accuracy must be a list"),
        ({"labelers": [1]}, "'labelers' parameter of qa_accuracy"),
    ],
)
def test_bad_options_are_refused(params, match):
    with pytest.raises(InvalidInputError, match=match):
        QaAccuracy(**params)


def test_key_round_trip():
    study = studies.create_from_key("qa_accuracy[refusal_phrases=no comment+i don't know]")
    assert study.refusal_phrases == ("no comment", "i don't know")
    assert studies.create_from_key(study.key) == study


# -- real data ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(real_run):
    data = real_run(ingested=("truthfulqa", "ragtruth"), labelers=("rouge_l",))
    return data, QaAccuracy().run(data)


def test_truthfulqa_human_and_rouge_accuracy(real):
    data, result = real
    table = result.table("qa_accuracy").query("dataset == 'truthfulqa'").set_index("labeler")
    human = table.loc["human"]
    assert (human["generator"], human["n_responses"]) == ("unknown", 22434)
    assert human["n_correct"] == 9484  # the human 'True: yes' answers
    frame = data.frame("truthfulqa")
    lowered = frame["text"].str.lower()
    refused = (frame["length_words"] == 0) | lowered.map(
        lambda t: (
            any(p in t for p in ("no comment", "i don't know", "i do not know"))
            or any(p in t for p in ("i cannot answer", "i can't answer", "unable to answer"))
            or any(p in t for p in ("i'm not sure", "i am not sure"))
        )
    )
    assert human["n_refusals"] == int(refused.sum()) > 0
    v = data.verdicts("truthfulqa")
    both = v["human"].notna() & v["rouge_l"].notna()
    expected = (v.loc[both, "rouge_l"] == 0).mean() - (v.loc[both, "human"] == 0).mean()
    assert table.loc["rouge_l", "accuracy_difference"] == pytest.approx(expected)
    assert table.loc["rouge_l", "n_paired"] == both.sum()


def test_ragtruth_qa_per_generator(real):
    data, result = real
    table = result.table("qa_accuracy").query("dataset == 'ragtruth'")
    assert set(table["task"]) == {"rag_qa"} and table["generator"].nunique() == 6
    assert set(table["labeler"]) == {"human"}  # no references: ROUGE-L has no verdicts here
    assert table["n_responses"].sum() == 817
    assert (table["n_judged"] - table["n_correct"]).sum() == 259
    frame = data.frame("ragtruth").query("task == 'rag_qa'")
    counts = frame.groupby("model").size()
    pd.testing.assert_series_equal(
        table.set_index("generator")["n_responses"].sort_index(),
        counts.sort_index(),
        check_names=False,
    )
