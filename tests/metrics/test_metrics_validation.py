import numpy as np
import pytest

from realitycheck import metrics
from realitycheck.errors import InvalidInputError

SCORE_FUNCS = ["auroc", "pr_auc", "roc_curve", "precision_recall_curve", "choose_threshold"]
PRED_FUNCS = ["accuracy", "balanced_accuracy", "precision", "recall", "f1", "f1_macro"]
PRED_FUNCS += ["f1_weighted", "cohen_kappa"]


@pytest.mark.parametrize("name", SCORE_FUNCS + PRED_FUNCS)
@pytest.mark.parametrize(
    ("y_true", "second", "match"),
    [
        (
            [0, 1, 1],
            [0, 1],
            r"'y_\w+' parameter of {f} must be an array with one value per item .*Got 2",
        ),
        ([0, 1, 2], [0, 1, 1], r"'y_true' parameter of {f} must be an array of 0/1 .*\[2\]"),
        ([0, 1, np.nan], [0, 1, 1], r"'y_true' parameter of {f} must be an array of 0/1 .*nan"),
        ([], [], r"'y_true' parameter of {f} must be a non-empty array. Got an empty"),
        ([[0, 1]], [[0, 1]], r"'y_true' parameter of {f} must be a 1-D array. Got .*\(1, 2\)"),
        (["a", "b"], [0, 1], r"'y_true' parameter of {f} must be an array-like of real numbers"),
    ],
)
def test_bad_labels_are_rejected(name, y_true, second, match):
    with pytest.raises(InvalidInputError, match=match.format(f=name)):
        getattr(metrics, name)(y_true, second)


@pytest.mark.parametrize("name", SCORE_FUNCS)
@pytest.mark.parametrize(
    ("scores", "match"),
    [
        ([0.1, np.nan, 0.3], r"'y_score' parameter of {f} .*finite.*Got 1 NaN and 0 infinite"),
        ([0.1, np.inf, -np.inf], r"'y_score' parameter of {f} .*Got 0 NaN and 2 infinite"),
        (
            [0.1, 0.2, 0.3, 0.4],
            r"'y_score' parameter of {f} must be an array with one value per item",
        ),
    ],
)
def test_bad_scores_are_rejected(name, scores, match):
    with pytest.raises(InvalidInputError, match=match.format(f=name)):
        getattr(metrics, name)([0, 1, 1], scores)


@pytest.mark.parametrize("name", PRED_FUNCS)
def test_non_binary_predictions_are_rejected(name):
    with pytest.raises(InvalidInputError, match=rf"'y_pred' parameter of {name} .*\[0.7\]"):
        getattr(metrics, name)([0, 1, 1], [0, 1, 0.7])


@pytest.mark.parametrize("name", ["pearson", "spearman"])
def test_correlation_inputs_are_checked(name):
    func = getattr(metrics, name)
    with pytest.raises(
        InvalidInputError, match=rf"'y' parameter of {name} must be an array with one value"
    ):
        func([1, 2, 3], [1, 2])
    with pytest.raises(InvalidInputError, match=rf"'x' parameter of {name} .*1 NaN"):
        func([1, np.nan, 3], [1, 2, 3])
    with pytest.raises(InvalidInputError, match=rf"'x' parameter of {name} must be a non-empty"):
        func([], [])
