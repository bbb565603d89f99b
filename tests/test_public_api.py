import subprocess
import sys

import realitycheck
import realitycheck.metrics


def test_all_is_sorted_and_every_name_exists():
    for module in (realitycheck, realitycheck.metrics):
        assert list(module.__all__) == sorted(module.__all__)
        for name in module.__all__:
            assert hasattr(module, name), name


def test_import_does_not_pull_torch_or_backends():
    code = (
        "import sys, realitycheck; realitycheck.labelers.names(); realitycheck.detectors.names();"
        "bad=[m for m in ('torch','transformers','sentence_transformers') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_import_and_the_cli_do_not_pull_scipy_stats():
    # scipy.stats takes over half a second to import; every use imports it lazily.
    code = (
        "import sys, realitycheck, realitycheck.cli, realitycheck.pipeline;"
        "print(','.join(m for m in ('scipy.stats', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_did_you_mean_names_the_closest_choice_or_nothing():
    from realitycheck.errors import did_you_mean

    assert did_you_mean("humn", ["human", "recorded:x"]) == " Did you mean 'human'?"
    assert did_you_mean("zzzz", ["human"]) == ""
    assert did_you_mean("lenght", iter(["length"])) == " Did you mean 'length'?"
