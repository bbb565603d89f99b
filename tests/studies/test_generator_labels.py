"""Generator names in studies: same last segment, maths and bidi characters."""

import numpy as np
import pytest

from realitycheck import RunStore
from realitycheck.analysis import Bootstrap
from realitycheck.records import Example, Label, Response, Score
from realitycheck.store import RunData
from realitycheck.studies import studies

PNG = b"\x89PNG\r\n\x1a\n"
TWINS = ("meta-llama/Llama-3-8B", "my-finetune/Llama-3-8B", "x/other")
HOSTILE = ("$x^$", "a/$\\frac{", "b\u202egnp.exe")


def _run(path, models):
    """30 QA questions answered by each model; the later models hallucinate less.

    The accuracy order is the reverse of the order of ``models``, so a figure
    that reorders rows by accuracy has to match them by name.
    """
    rng = np.random.default_rng(0)
    store = RunStore(path)
    examples = [
        Example(example_id=f"q/{i}", dataset="toy", task="qa", question="?", references=("x",))
        for i in range(30)
    ]
    responses, labels, scores = [], [], []
    for i in range(30):
        for k, model in enumerate(models):
            rid = f"q/{i}/{k}"
            text = "Paris is the answer." * (1 + i % 3)
            responses.append(Response(response_id=rid, example_id=f"q/{i}", model=model, text=text))
            wrong = bool(rng.random() < 0.6 - 0.2 * k)
            noisy = wrong if rng.random() < 0.8 else not wrong
            labels.append(Label(response_id=rid, labeler="human", hallucinated=wrong))
            labels.append(Label(response_id=rid, labeler="judge", hallucinated=noisy))
            scores.append(Score(response_id=rid, detector="d1", value=float(rng.random() + wrong)))
            scores.append(Score(response_id=rid, detector="d2", value=float(rng.random())))
    for records in (examples, responses, labels, scores):
        store.append(records)
    return RunData(store)


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("twins"), TWINS)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("hostile"), HOSTILE)


def _analyse(name, data):
    return studies.create(name).analyse(data, Bootstrap(n_resamples=50, seed=0))


def test_qa_accuracy_draws_two_generators_with_the_same_last_segment(twins):
    # Before: "cannot reindex on an axis with duplicate labels" (both were "Llama-3-8B").
    result = _analyse("qa_accuracy", twins)
    assert len(result.figures) == 1 and result.figures[0].png.startswith(PNG)
    table = result.table("qa_accuracy")
    human = table[table["labeler"] == "human"].set_index("generator")["n_judged"]
    assert human.to_dict() == dict.fromkeys(TWINS, 30)


def test_leaderboard_names_each_twin_apart(twins):
    result = _analyse("leaderboard", twins)
    assert result.figures and all(f.png.startswith(PNG) for f in result.figures)
    # The finding names the lowest and highest generator by an unambiguous label.
    # (Before: "rank Llama-3-8B lowest ... and Llama-3-8B highest".)
    assert "rank my-finetune/Llama-3-8B lowest" in result.finding
    assert "and meta-llama/Llama-3-8B highest" in result.finding
    pairs = result.table("inversions")["discordant_pairs"].iloc[0].split("; ")
    assert len(pairs) == 3
    assert {side for pair in pairs for side in pair.split(" < ")} == {
        "meta-llama/Llama-3-8B",
        "my-finetune/Llama-3-8B",
        "other",
    }


@pytest.mark.parametrize("name", ["leaderboard", "significance", "qa_accuracy"])
def test_maths_and_bidi_in_model_names_do_not_break_figures(hostile, name):
    result = _analyse(name, hostile)
    assert result.figures, result.skipped
    assert all(f.png.startswith(PNG) for f in result.figures)
