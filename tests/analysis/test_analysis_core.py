import numpy as np
import pytest

from realitycheck import metrics as M
from realitycheck.analysis import (
    AGREEMENT_METRICS,
    CALIBRATION,
    OBJECTIVES,
    RANKING_METRICS,
    TEST,
    THRESHOLD_METRICS,
    Bootstrap,
    Measure,
    Where,
    split_of,
)
from realitycheck.errors import InvalidInputError
from realitycheck.records.keys import LabelKey, annotator_key, is_human, protocol_key, recorded_key


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"n_resamples": 0},
            r"The 'n_resamples' parameter of Bootstrap must be an int >= 1\. Got 0",
        ),
        ({"n_resamples": 2.0}, r"'n_resamples' parameter of Bootstrap must be an int >= 1"),
        ({"n_resamples": True}, r"'n_resamples' parameter of Bootstrap must be an int >= 1"),
        ({"confidence": 1.0}, r"'confidence' parameter of Bootstrap must be a float in \(0, 1\)"),
        ({"confidence": "0.9"}, r"'confidence' parameter of Bootstrap"),
        ({"seed": -1}, r"'seed' parameter of Bootstrap must be an int >= 0"),
    ],
)
def test_bootstrap_rejects_bad_settings_with_one_message_shape(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        Bootstrap(**kwargs)


def test_bootstrap_settings_reach_every_interval_of_measure():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    s = rng.normal(size=(2, 300)) + y
    where = Where(labeler="human", slice="all", dataset="d", n_excluded=0)
    for boot in (Bootstrap(n_resamples=50, seed=1), Bootstrap(n_resamples=80, confidence=0.8)):
        rows = Measure(boot).rows("auroc", ["a", "b"], y, s, where)
        expected = M.bootstrap_ci(
            "auroc", y, s, n_resamples=boot.n_resamples, confidence=boot.confidence, seed=boot.seed
        )
        assert [r.ci_low for r in rows] == pytest.approx(list(expected.ci_low))
        assert [r.ci_high for r in rows] == pytest.approx(list(expected.ci_high))
    assert Bootstrap().as_dict() == {"n_resamples": 1000, "confidence": 0.95, "seed": 0}


def test_split_is_by_example_stable_and_follows_the_fraction():
    ids = [f"ex-{i}" for i in range(4000)]
    half = split_of(ids)
    assert set(half) == {CALIBRATION, TEST}
    assert (split_of(list(reversed(ids)))[::-1] == half).all()
    share = (split_of(ids, 0.25) == CALIBRATION).mean()
    assert share == pytest.approx(0.25, abs=0.03)
    assert ((split_of(ids, 0.25) == CALIBRATION) <= (half == CALIBRATION)).all()


def test_metric_lists_name_only_what_the_metric_functions_know():
    assert sorted(THRESHOLD_METRICS) == sorted(M.CLASSIFICATION_METRICS)
    assert set(AGREEMENT_METRICS) <= set(M.CLASSIFICATION_METRICS)
    assert RANKING_METRICS == M.RANKING_METRICS
    assert OBJECTIVES == M.THRESHOLD_OBJECTIVES


@pytest.mark.parametrize(
    ("key", "kind", "annotator", "protocol", "name"),
    [
        ("human", "human", None, None, None),
        ("human:ann 1", "human", "ann 1", None, None),
        ("human[protocol=worst]", "human", None, "worst", None),
        ("recorded:hhem", "recorded", None, None, "hhem"),
        ("rouge_l[threshold=0.5]", "component", None, None, None),
        ("humanish", "component", None, None, None),
        ("recorded", "component", None, None, None),
    ],
)
def test_label_key_grammar(key, kind, annotator, protocol, name):
    parsed = LabelKey.parse(key)
    assert (parsed.kind, parsed.annotator, parsed.protocol, parsed.name) == (
        kind,
        annotator,
        protocol,
        name,
    )
    assert parsed.is_human == is_human(key) == (kind == "human")
    assert parsed.is_annotator == (annotator is not None)
    assert parsed.is_human_aggregate == (kind == "human" and annotator is None)
    assert parsed.is_recorded == (kind == "recorded")


def test_key_builders_round_trip_through_the_parser():
    assert LabelKey.parse(annotator_key("a:b")).annotator == "a:b"
    assert LabelKey.parse(protocol_key("majority")).protocol == "majority"
    assert LabelKey.parse(recorded_key("x[y]")).name == "x[y]"
