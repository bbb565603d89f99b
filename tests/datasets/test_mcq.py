"""FACTOR and TruthfulQA MC1/MC2 as multiple-choice examples, and their bad rows."""

from __future__ import annotations

import json

import pytest

from realitycheck.datasets import datasets
from realitycheck.errors import InvalidInputError


@pytest.mark.parametrize(
    ("key", "count", "options"),
    [("factor", 1036, {4}), ("factor[part=expert]", 236, {4})],
)
def test_factor_parts_have_the_true_completion_first(load, key, count, options):
    bundle = load(key)
    assert len(bundle.examples) == count and not bundle.responses
    assert {len(e.choices) for e in bundle.examples} == options
    assert all(e.task == "mcq" and e.meta["gold"] == [0] for e in bundle.examples)
    first = bundle.examples[0]
    assert first.references == (first.choices[0],) and len(first.incorrect_references) == 3


def test_factor_prefix_is_the_truncated_one_unless_full(load, data_dir):
    import pandas as pd

    raw = pd.read_csv(data_dir / "factor" / "news_factor.csv")
    truncated = load("factor").examples
    full = load("factor[prefix=full]").examples
    assert truncated[5].question == raw["turncated_prefixes"][5]
    assert full[5].question == raw["full_prefix"][5]
    assert truncated[5].choices[1] == raw["contradiction_0"][5]


def test_truthfulqa_mc1_has_one_true_option_and_mc2_several(load, data_dir):
    mc1 = load("truthfulqa_mc").examples
    mc2 = load("truthfulqa_mc[variant=mc2]").examples
    assert len(mc1) == len(mc2) == 817
    assert all(len(e.meta["gold"]) == 1 for e in mc1)
    assert sum(len(e.meta["gold"]) > 1 for e in mc2) > 700
    raw = json.loads((data_dir / "truthfulqa" / "mc_task.json").read_text())
    marked = [a for a, v in raw[10]["mc2_targets"].items() if v == 1]
    assert list(mc2[10].references) == marked


@pytest.mark.parametrize(
    ("targets", "match"),
    [
        ({"only one": 1}, r"mc_task\.json, line 2, field 'choices': .*at least two options"),
        ({"a": 0, "b": 0}, r"line 2, field 'gold': The gold index must be among"),
        ({"a": 1, "b": 2}, r"line 2, field 'mc1_targets': Each target must be marked 0 or 1"),
        ({"a": 1, " ": 0}, r"line 2, field 'choices': Option 1 is empty"),
    ],
)
def test_a_bad_question_names_its_row(tmp_path, targets, match):
    (tmp_path / "truthfulqa").mkdir()
    good = {"question": "Q?", "mc1_targets": {"a": 1, "b": 0}}
    (tmp_path / "truthfulqa" / "mc_task.json").write_text(
        json.dumps([good, {"question": "Q2?", "mc1_targets": targets}])
    )
    with pytest.raises(InvalidInputError, match=match):
        datasets.create("truthfulqa_mc", data_dir=tmp_path).load()


def test_a_factor_file_without_its_columns_is_named(tmp_path):
    (tmp_path / "factor").mkdir()
    (tmp_path / "factor" / "news_factor.csv").write_text("full_prefix,completion\nA,b\n")
    (tmp_path / "factor" / "expert_factor.csv").write_text("x\n1\n")
    with pytest.raises(InvalidInputError, match=r"field 'turncated_prefixes'.*lacks the column"):
        datasets.create("factor", data_dir=tmp_path).load()
