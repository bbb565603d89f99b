"""A name asked of the wrong family says which family it is of, and how to use it (issue 25).

``realitycheck label -l length`` used to say only that there is no labeler
``length``; it now says that ``length`` is a detector, and how to give one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from realitycheck.backends import backends
from realitycheck.cli import main
from realitycheck.datasets import datasets
from realitycheck.detectors import detectors
from realitycheck.errors import UnknownComponentError
from realitycheck.labelers import labelers
from realitycheck.studies import studies


def _fruit(fruit_answers, path: Path, n: int = 6) -> str:
    """A files dataset of ``n`` answers with human labels (no samples, no log-probs)."""
    fruit_answers(path, n)
    return (
        f"files[path={path},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid+model:llm]"
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["label", "-l", "length"],
            "There is no labeler named 'length'. 'length' is a detector, not a labeler: "
            "use `realitycheck detect -D length`. Available: ",
        ),
        (
            ["detect", "-D", "rouge_l"],
            "There is no detector named 'rouge_l'. 'rouge_l' is a labeler, not a detector: "
            "use `realitycheck label -l rouge_l`. Available: ",
        ),
        (
            ["evaluate", "-D", "exact_match"],
            "'exact_match' is a labeler, not a detector: use `realitycheck label -l exact_match`.",
        ),
    ],
)
def test_a_component_of_another_family_says_which_and_how_to_use_it(
    tmp_path, capsys, fruit_answers, args, said
):
    dataset = _fruit(fruit_answers, tmp_path / "answers.jsonl")
    assert main(["-q", *args, "-d", dataset, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert "Did you mean" not in err  # the near-miss in the wrong family is no help


@pytest.mark.parametrize(
    ("registry", "name", "said"),
    [
        (labelers, "semantic_entropy", "is a detector, not a labeler: use `realitycheck detect -D"),
        (
            detectors,
            "qa_judge",
            "is a labeler, not a detector: use `realitycheck label -l qa_judge`",
        ),
        (detectors, "ragtruth", "'ragtruth' is a dataset, not a detector: use `-d ragtruth`."),
        (datasets, "rouge_l", "is a labeler, not a dataset"),
        (backends, "label_noise", "is a study, not a backend: use `realitycheck study label_noise"),
        (studies, "openai", "is a backend, not a study: use `realitycheck generate -b openai`."),
        (labelers, "nq-open", "'nq_open' is a dataset, not a labeler: use `-d nq_open`."),
    ],
)
def test_every_family_names_the_family_a_name_belongs_to(registry, name, said):
    with pytest.raises(UnknownComponentError) as caught:
        registry.get(name)
    assert said in str(caught.value)


def test_a_name_no_family_knows_keeps_did_you_mean_and_no_family_hint():
    with pytest.raises(UnknownComponentError) as caught:
        detectors.get("lenght")
    text = str(caught.value)
    assert "Did you mean 'length'" in text and " is a " not in text
