"""The package's public face, and the names it shares with the files dataset."""

from __future__ import annotations

import realitycheck.annotation as annotation
from realitycheck.datasets.files._label_rules import AGGREGATES as FILES_AGGREGATES


def test_all_is_sorted_and_every_name_loads():
    assert list(annotation.__all__) == sorted(annotation.__all__)
    for name in annotation.__all__:
        assert getattr(annotation, name) is not None, name
    assert set(dir(annotation)) >= set(annotation.__all__)


def test_the_aggregate_rules_are_those_of_the_files_dataset():
    assert annotation.AGGREGATES == FILES_AGGREGATES
