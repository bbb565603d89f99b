"""What every study shares: parameters declared at their fields, intervals from the run."""

import dataclasses

import pytest

from realitycheck import Bootstrap, Example, InvalidInputError, Label, Response, RunStore, Score
from realitycheck.params import constraints_of
from realitycheck.store import RunData
from realitycheck.studies import Study, studies

BOOTSTRAP_SETTINGS = {"n_resamples", "confidence", "seed"}


@pytest.mark.parametrize("name", studies.names())
def test_every_parameter_is_declared_and_none_is_a_bootstrap_setting(name):
    cls = studies.get(name)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    assert not BOOTSTRAP_SETTINGS & {f.name for f in fields}
    undeclared = [f.name for f in fields if not constraints_of(f)]
    assert undeclared == [], f"{name}: {undeclared} have no declared constraint"


@pytest.mark.parametrize("name", studies.names())
def test_a_bootstrap_setting_is_not_a_study_parameter(name):
    with pytest.raises(
        InvalidInputError, match=f"The study '{name}' has no parameter 'n_resamples'"
    ):
        studies.create(name, n_resamples=50)


@pytest.mark.parametrize("name", studies.names())
def test_a_bad_reference_is_refused_in_the_one_message_shape(name):
    with pytest.raises(
        InvalidInputError,
        match=f"^The 'reference' parameter of {name} must be a non-empty str. Got '' instead.$",
    ):
        studies.create(name, reference="")


@pytest.mark.parametrize("name", studies.names())
def test_hyphenated_names_build_the_same_study(name):
    assert studies.create_from_key(name.replace("_", "-")) == studies.create(name)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("tiny"))
    store.append(
        [Example(example_id=f"e{i}", dataset="toy", task="qa", references=("a",)) for i in range(8)]
    )
    store.append(
        [
            Response(response_id=f"r{i}/{m}", example_id=f"e{i}", model=m, text="a b" * (i + 1))
            for i in range(8)
            for m in ("m1", "m2")
        ]
    )
    store.append(
        [
            Label(response_id=f"r{i}/{m}", labeler="human", hallucinated=i % 2 == 0)
            for i in range(8)
            for m in ("m1", "m2")
        ]
    )
    store.append(
        [
            Score(response_id=f"r{i}/{m}", detector=d, value=float(i * k))
            for i in range(8)
            for m in ("m1", "m2")
            for k, d in enumerate(("d1", "d2"), start=1)
        ]
    )
    return RunData(store)


@pytest.mark.parametrize("name", studies.names())
def test_every_study_records_the_bootstrap_it_was_given(tiny, name):
    boot = Bootstrap(n_resamples=30, confidence=0.9, seed=7)
    study: Study = studies.create(name)
    result = study.run(tiny, bootstrap=boot)
    assert result.bootstrap == {"n_resamples": 30, "confidence": 0.9, "seed": 7}
    assert result.study == name
