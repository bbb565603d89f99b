"""Every study takes any labeler as the reference and names it, never "human" in its place."""

import re

import pytest

from realitycheck.analysis import Bootstrap
from realitycheck.runner import build_studies
from realitycheck.studies import studies

REFERENCE = "rouge_l"
# Names a stored human key as itself (a labeler column, a key list), not the reference.
_HUMAN_KEY = re.compile(r"(?<![\w-])human(\[protocol=[^\]]*\]|:[\w-]+)?(?![\w-])")


@pytest.fixture(scope="module")
def results(lexical_run):
    boot = Bootstrap(n_resamples=30)
    return {
        name: studies.create(name, reference=REFERENCE).run(lexical_run, bootstrap=boot)
        for name in studies.names()
    }


def _reference_words(text):
    """Mentions of humans that are not a human label key: 'humans', 'human_rate', 'human rate'."""
    return re.findall(r"\bhumans\b|\bhuman_\w+|\bhuman (?:rate|rank|labels?\b(?! human))", text)


@pytest.mark.parametrize("name", studies.names())
def test_a_labeler_as_reference_is_named_in_tables_captions_and_figures(results, name):
    result = results[name]
    assert result.spec["params"]["reference"] == REFERENCE
    for table in result.tables:
        columns = [str(c) for c in table.frame.columns]
        if name != "benchmark_audit":  # it audits the dataset's own human labels
            assert not [c for c in columns if c.startswith("human_")], (table.name, columns)
        assert not _reference_words(table.caption), (table.name, table.caption)
    for figure in result.figures:
        assert not _reference_words(figure.caption), (figure.stem, figure.caption)
    if name != "benchmark_audit":
        assert not _reference_words(result.finding), result.finding


def test_reference_columns_are_named_after_the_key(results):
    # The leaderboard's columns: tests/studies/test_leaderboard.py (one generator here).
    shift = results["labeler_shift"].table("shift")
    assert REFERENCE not in set(shift["labeler"])
    assert set(shift["reference"] if "reference" in shift else [REFERENCE]) == {REFERENCE}
    tests = results["significance"].table("tests")
    assert set(tests["value"]) == {f"hallucinated:{REFERENCE}"}


def test_run_studies_gives_the_reference_to_keys_without_their_own():
    built = build_studies(["length", "leaderboard[reference=token_f1]"], reference=REFERENCE)
    assert [s.reference for s in built] == [REFERENCE, "token_f1"]
    assert [s.reference for s in build_studies(["length"])] == ["human"]
