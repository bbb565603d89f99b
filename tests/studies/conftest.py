"""Runs of the real data for the study tests, each recipe built once per session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from realitycheck import RunStore, datasets, detect, ingest, label
from realitycheck import detectors as detector_registry
from realitycheck import labelers as labeler_registry
from realitycheck.datasets import Bundle
from realitycheck.store import RunData


class Recipe(NamedTuple):
    """What a real run holds (see ``real_store``)."""

    truthfulqa: int = 0
    ingested: tuple[str, ...] = ()
    labelers: tuple[str, ...] = ()
    detectors: tuple[str, ...] = ()


@pytest.fixture(scope="session")
def truthfulqa_bundle(data_dir) -> Bundle:
    """TruthfulQA's examples, responses and human labels, read once."""
    return datasets.create("truthfulqa", data_dir=data_dir).load()


@pytest.fixture(scope="session")
def real_store(tmp_path_factory, data_dir, truthfulqa_bundle) -> Callable[..., RunStore]:
    """Return ``build(*, truthfulqa=0, ingested=(), labelers=(), detectors=())``.

    Each call builds a new run in a new folder: the first ``truthfulqa``
    TruthfulQA examples with their responses and human labels (appended, not
    ingested: the run's manifest does not list TruthfulQA), then each dataset
    of ``ingested`` ingested in order, every response labelled by the
    ``labelers`` (names) and scored by the ``detectors`` (keys).
    """

    def build(**recipe: Any) -> RunStore:
        plan = Recipe(**recipe)
        store = RunStore(tmp_path_factory.mktemp("real_run"))
        if plan.truthfulqa:
            bundle = truthfulqa_bundle
            keep = {e.example_id for e in bundle.examples[: plan.truthfulqa]}
            responses = [r for r in bundle.responses if r.example_id in keep]
            ids = {r.response_id for r in responses}
            store.append([e for e in bundle.examples if e.example_id in keep])
            store.append(responses)
            store.append([lab for lab in bundle.labels if lab.response_id in ids])
        for name in plan.ingested:
            ingest(store, datasets.create(name, data_dir=data_dir))
        if plan.labelers:
            label(store, [labeler_registry.create(name) for name in plan.labelers])
        if plan.detectors:
            detect(store, [detector_registry.create_from_key(key) for key in plan.detectors])
        return store

    return build


@pytest.fixture(scope="session")
def real_run(real_store) -> Callable[..., RunData]:
    """Return ``build(**recipe)``: the :class:`RunData` of ``real_store(**recipe)``.

    A recipe is built once per session and its run is shared by every test
    module that asks for it, so callers must not add records to it (use
    ``real_store`` for a run of one's own).
    """
    built: dict[Recipe, RunData] = {}

    def build(**recipe: Any) -> RunData:
        plan = Recipe(**recipe)
        if plan not in built:
            built[plan] = RunData(real_store(**plan._asdict()))
        return built[plan]

    return build


@pytest.fixture(scope="session")
def lexical_run(real_run) -> RunData:
    """TruthfulQA's first 60 examples and HaluEval general, lexical labels and lengths.

    Shared by the length and labeler_agreement studies.
    """
    return real_run(
        truthfulqa=60,
        ingested=("halueval_general",),
        labelers=("rouge_l", "bleu", "token_f1", "exact_match"),
        detectors=("length", "length[unit=chars]"),
    )
