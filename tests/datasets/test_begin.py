from collections import Counter

import pytest

from realitycheck.datasets import datasets
from realitycheck.datasets.begin import SPLITS, Begin
from realitycheck.errors import InvalidInputError


@pytest.mark.parametrize(
    ("split", "n", "source"),
    [
        ("wow-test", 3607, "wow"),
        ("wow-dev", 430, "wow"),
        ("cmu-dev", 416, "cmu"),
        ("tc-dev", 383, "tc"),
    ],
)
def test_counts_per_split(load, split, n, source):
    bundle = load(f"begin[splits={split}]")
    assert len(bundle.responses) == len(bundle.labels) == n
    assert {r.meta["split"] for r in bundle.responses} == {split}
    assert {e.meta["source"] for e in bundle.examples} == {source}
    assert {e.task for e in bundle.examples} == {"dialogue"}
    assert {r.model for r in bundle.responses} == {"gpt2", "t5", "ctrl", "doha"}


def test_fields_are_read_verbatim_with_quotes(load, data_dir):
    bundle = load("begin[splits=wow-test]")
    lines = (data_dir / SPLITS["wow-test"]).read_bytes().decode("utf-8").split("\r\n")[1:]
    assert len(lines) == len(bundle.responses)
    examples = {e.example_id: e for e in bundle.examples}
    quoted = 0
    for line, response in zip(lines, bundle.responses, strict=True):
        model, _, knowledge, message, text, _ = line.split("\t")
        assert response.text == text and response.model == model
        example = examples[response.example_id]
        assert (example.context, example.question) == (knowledge, message)
        quoted += '"' in line
    assert quoted == 626


@pytest.mark.parametrize(
    ("generic", "value"), [("exclude", None), ("hallucinated", True), ("faithful", False)]
)
def test_label_mapping(load, generic, value):
    bundle = load(f"begin[generic={generic}]")
    counts = Counter((lab.category, lab.hallucinated) for lab in bundle.labels)
    assert counts == {
        ("not fully attributable", True): 2209 + 250 + 278 + 307,
        ("fully attributable", False): 1392 + 180 + 59 + 74,
        ("generic", value): 6 + 79 + 2,
    }


def test_duplicate_model_in_one_example_gets_a_suffix(load):
    ids = [r.response_id for r in load("begin[splits=tc-dev]").responses]
    assert len(set(ids)) == len(ids) == 383
    assert sum(i.endswith("#2") for i in ids) == 1


def test_row_with_a_missing_field_is_named(tmp_path, data_dir):
    (tmp_path / "begin").mkdir()
    for rel in Begin.files:
        (tmp_path / rel).write_bytes((data_dir / rel).read_bytes())
    path = tmp_path / SPLITS["cmu-dev"]
    lines = path.read_bytes().decode("utf-8").split("\r\n")
    lines[9] = lines[9].rsplit("\t", 1)[0]
    path.write_bytes("\r\n".join(lines).encode("utf-8"))
    with pytest.raises(InvalidInputError, match=r"begin_dev_cmu\.tsv, line 10: .*6 tab-separated"):
        Begin(data_dir=tmp_path, splits=("cmu-dev",)).load()


@pytest.mark.parametrize(
    ("params", "match"), [({"generic": "drop"}, "'generic'"), ({"splits": ("wow",)}, "'splits'")]
)
def test_bad_parameters(params, match):
    with pytest.raises(InvalidInputError, match=match):
        datasets.create("begin", **params)
