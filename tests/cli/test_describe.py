"""`describe`, `components` and `datasets describe`: documentation without building components."""

from __future__ import annotations

import json
import re
import tomllib

import pytest

from realitycheck.cli import main
from realitycheck.datasets import datasets
from realitycheck.registry import registry_of

FAMILIES = ("datasets", "backends", "labelers", "detectors", "studies")
EVERY = [(family, name) for family in FAMILIES for name in registry_of(family).names()]

CSV = (
    "prompt,answer,is_wrong,hhem,gold\n"
    "Capital of France?,Paris,no,0.9,Paris\n"
    "Capital of France?,Lyon,yes,0.2,Paris\n"
    "Capital of Italy?,Rome,no,0.8,Rome\n"
)


@pytest.mark.parametrize(("family", "name"), EVERY, ids=[f"{f}:{n}" for f, n in EVERY])
def test_describe_prints_every_component_of_every_family(family, name, capsys):
    assert main(["describe", name, "--family", family]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{name} (") and "Parameters" in out


def test_describe_a_name_of_two_families_prints_both_unless_one_is_chosen(capsys):
    assert main(["describe", "length"]) == 0
    out = capsys.readouterr().out
    assert "length (detector)" in out and "length (study)" in out
    assert main(["describe", "length", "--family", "studies", "--json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["family"] == "studies" and {p["name"] for p in doc["params"]} >= {"reference"}


def test_describe_takes_the_hyphenated_spelling_and_suggests_the_canonical_one(capsys):
    assert main(["describe", "label-noise"]) == 0
    assert capsys.readouterr().out.startswith("label_noise (study)")
    assert main(["describe", "label-nose"]) == 2
    assert "Did you mean 'label_noise'" in capsys.readouterr().err


def test_describe_shows_a_nested_component_parameter(capsys):
    assert main(["describe", "semantic_entropy"]) == 0
    out = capsys.readouterr().out
    assert "judge: Backend | None (default none)" in out
    assert "must be a backend" in out and "``openai[model=gpt-4o-mini]``" in out


def test_components_lists_every_family(capsys):
    assert main(["components"]) == 0
    out = capsys.readouterr().out
    for family in FAMILIES:
        assert f"{family}:" in out
    assert "  nq_open " in out and "  mock " in out and "  label_noise " in out


def test_datasets_describe_files_prints_the_column_mapping_with_examples(capsys):
    assert main(["datasets", "describe", "files"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("files (dataset)")
    for text in (
        "Column mapping",
        "``references``: gold answers",
        "Examples:",
        "[datasets.params]",
    ):
        assert text in out
    assert "Give path to load it" in out


def test_the_documented_files_examples_work(tmp_path, capsys):
    """The key and the TOML table of the files docstring load a real CSV."""
    (tmp_path / "my.csv").write_text(CSV)
    doc = datasets.get("files").__doc__
    (key,) = re.findall(r"^\s+(files\[path=my\.csv[^\s]*\])$", doc, flags=re.M)
    key = key.replace("path=my.csv", f"path={tmp_path / 'my.csv'}")
    key = key.replace("]", ",columns=question:prompt+references:gold]")
    assert main(["-q", "datasets", "describe", key, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["responses"] == 3 and summary["examples"] == 2
    assert summary["labels"]["human"]["hallucinated"] == 1
    assert summary["scores"] == {"recorded:hhem": {"n": 3, "missing": 0}}

    toml_text = doc.split("(TOML)::", 1)[1].split("Args:", 1)[0]
    (entry,) = tomllib.loads(toml_text.replace("    ", ""))["datasets"]
    entry["params"]["path"] = str(tmp_path / "my.csv")
    bundle = datasets.create_from_spec(entry).load()
    assert [e.question for e in bundle.examples] == ["Capital of France?", "Capital of Italy?"]
    assert bundle.examples[0].references == ("Paris",)
    assert sorted(s.value for s in bundle.scores) == pytest.approx([0.1, 0.2, 0.8])


def test_datasets_describe_prints_the_docs_on_request(capsys):
    assert main(["datasets", "describe", "truthfulqa", "--docs"]) == 0
    assert capsys.readouterr().out.startswith("truthfulqa (dataset)")


def test_the_readme_pointer_to_the_files_docstring_works():
    import pydoc

    import realitycheck.datasets.files

    module = pydoc.locate("realitycheck.datasets.files")
    assert module is realitycheck.datasets.files
    assert "realitycheck datasets describe files" in module.__doc__
    assert "Column mapping" in pydoc.render_doc(module)


def test_comma_lists_of_keys_keep_quotes_and_nested_brackets():
    from realitycheck.cli._app import split_keys

    values = ['files[path="a,b.csv"],bleu', "semantic_entropy[equivalence=llm,judge=mock[reply=x]]"]
    assert split_keys(values) == [
        'files[path="a,b.csv"]',
        "bleu",
        "semantic_entropy[equivalence=llm,judge=mock[reply=x]]",
    ]
