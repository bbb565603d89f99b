import ast
import inspect
import re
from pathlib import Path

import pytest

import realitycheck.metrics as metrics

PACKAGE = Path(metrics.__file__).parent
# Shared with evaluate and the studies; not metric functions of their own.
BUILDING_BLOCKS = {
    "CALIBRATION_METRICS",
    "CLASSIFICATION_METRICS",
    "ECE_BINNINGS",
    "RANKING_METRICS",
    "REJECTION_METRICS",
    "THRESHOLD_OBJECTIVES",
    "bootstrap_distribution",
    "from_counts",
    "rankdata",
    "resample_indices",
    "Resamples",
    "LITTLE_BOOTSTRAP_ABOVE",
    "LittleBootstraps",
    "LockedState",
}
EXPECTED = BUILDING_BLOCKS | {
    "BootstrapResult",
    "DeLong",
    "PairedBootstrap",
    "auroc_many",
    "correlation_pvalue",
    "delong",
    "discordant_pairs",
    "kendall_tau_b",
    "paired_auroc_bootstrap",
    "wilson_interval",
    "RejectionCurve",
    "Reliability",
    "UndefinedMetricWarning",
    "accuracy",
    "auroc",
    "balanced_accuracy",
    "bootstrap_ci",
    "brier",
    "ece",
    "prr",
    "rejection_curve",
    "reliability",
    "choose_threshold",
    "cohen_kappa",
    "f1",
    "f1_macro",
    "f1_weighted",
    "pearson",
    "pr_auc",
    "precision",
    "precision_recall_curve",
    "recall",
    "roc_curve",
    "spearman",
}
RANGED = sorted(
    EXPECTED
    - BUILDING_BLOCKS
    - {"BootstrapResult", "UndefinedMetricWarning", "bootstrap_ci", "choose_threshold"}
    - {"DeLong", "PairedBootstrap", "discordant_pairs", "RejectionCurve", "Reliability"}
)


def test_all_lists_the_public_api():
    assert set(metrics.__all__) == EXPECTED
    helpers = {"TYPE_CHECKING", "annotations", "lazy_names"}  # of the lazy __init__
    public = {name for name in vars(metrics) if not name.startswith("_")} - helpers
    # Only the private submodules are importable attributes besides __all__.
    assert public - EXPECTED == set()


@pytest.mark.parametrize("name", RANGED)
def test_docstring_states_the_range(name):
    doc = inspect.getdoc(getattr(metrics, name))
    assert re.search(r"in \[-?[01], 1\]", doc), name
    assert "Raises:" in doc and "Returns:" in doc


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_imports_only_lower_layers(path):
    tree = ast.parse(path.read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    for module in modules:
        root = module.split(".")[0]
        assert root in {"__future__", "numpy", "scipy", "realitycheck"} or root in {
            "dataclasses",
            "difflib",
            "hashlib",
            "numbers",
            "threading",
            "typing",
            "warnings",
            "collections",
        }, module
        if root == "realitycheck":
            # the layers below metrics (registry: the lazy loading of the package's names)
            lower = ("realitycheck.errors", "realitycheck.params", "realitycheck.registry")
            assert module in lower or module.startswith("realitycheck.metrics")
