"""Checks every registered labeler and detector: oriented, order-invariant, robust.

The checks every family shares (documented, exported, rebuilt) are in
``test_every_component.py``.
"""

from __future__ import annotations

import pytest
from _component_fixtures import minimal

from realitycheck import Example, Response, RunContext, detectors, labelers

CONTEXT = (
    "The Eiffel Tower was completed in 1889 in Paris. It is 330 metres tall. "
    "Gustave Eiffel's company designed and built the tower."
)
EXAMPLES = {
    "e1": Example(
        example_id="e1",
        dataset="t",
        task="rag_qa",
        question="When was the Eiffel Tower completed?",
        context=CONTEXT,
        references=("The Eiffel Tower was completed in 1889.",),
        # Another response to this source with its human annotation, for few-shot judges.
        meta={
            "annotated_responses": [
                {
                    "response_id": "other",
                    "model": "m",
                    "text": "The Eiffel Tower was completed in 1899.",
                    "verdict": "unwanted",
                    "annotations": [{"span": "1899", "label": "Unwanted", "note": "1889"}],
                }
            ]
        },
    ),
    "e2": Example(example_id="e2", dataset="t", task="qa", question="Who wrote Hamlet?"),
}
FAITHFUL = Response(
    response_id="good", example_id="e1", model="m", text="The Eiffel Tower was completed in 1889."
)
INVENTED = Response(
    response_id="bad",
    example_id="e1",
    model="m",
    text=(
        "Zorblax engineers assembled the glimmering spire during 1642 using 9,817 crystal "
        "beams imported from Neptune, according to the lunar archives of Quentaria."
    ),
)
NO_REFERENCE = Response(response_id="noref", example_id="e2", model="m", text="Shakespeare.")

COMPUTED_LABELERS = [n for n in labelers.names() if "recorded" not in labelers.get(n).needs]
# Labelers that run a published checkpoint, which no test here can download: their sign,
# formula and missing inputs are tested on tiny models in tests/whitebox/test_{name}.py.
CHECKPOINT_LABELERS = {"unieval", "q2", "critic"}
COMPUTED_LABELERS = [n for n in COMPUTED_LABELERS if n not in CHECKPOINT_LABELERS]
# Few-shot judges show the run's labelled responses; they are checked on runs in their tests.
RUN_LABELERS = [n for n in COMPUTED_LABELERS if "labels" in labelers.get(n).needs]
COMPUTED_DETECTORS = [n for n in detectors.names() if "recorded" not in detectors.get(n).needs]


def _build(registry, name):
    return registry.create(name, **minimal(registry.family, name))


def test_read_from_the_dataset_is_one_need_for_labelers_and_detectors():
    for registry in (labelers, detectors):
        recorded = [n for n in registry.names() if "recorded" in registry.get(n).needs]
        assert recorded, f"no {registry.family[:-1]} reads what a dataset ships"
        assert not any("stored" in registry.get(n).needs for n in registry.names())


@pytest.mark.parametrize("name", RUN_LABELERS)
def test_labeler_outside_a_run_says_it_needs_one(name):
    lab = _build(labelers, name)
    found = lab.label([FAITHFUL, INVENTED], EXAMPLES)
    assert [x.response_id for x in found] == ["good", "bad"]
    assert all(x.hallucinated is None and "within a run" in x.error for x in found)


@pytest.mark.parametrize("name", [n for n in COMPUTED_LABELERS if n not in RUN_LABELERS])
def test_labeler_sign_order_invariance_and_missing_inputs(name):
    lab = _build(labelers, name)
    responses = [FAITHFUL, INVENTED]
    forward = {x.response_id: x for x in lab.label(responses, EXAMPLES)}
    backward = {x.response_id: x for x in lab.label(responses[::-1], EXAMPLES)}
    assert forward == backward
    assert all(x.labeler == lab.key for x in forward.values())
    good, bad = forward["good"], forward["bad"]
    assert good.hallucinated is False and bad.hallucinated is True
    if good.score is not None:
        assert good.score < bad.score, "Label.score must be higher = more hallucinated"
    if lab.needs & {"references", "context"}:
        (missing,) = lab.label([NO_REFERENCE], EXAMPLES)
        assert missing.hallucinated is None and missing.error


GENERATION_FEATURES = {"samples", "logprobs", "entropy", "hidden"}
# Supervised detectors need a run's labels to train on; they are checked on runs in their tests.
TRAINED_DETECTORS = [n for n in COMPUTED_DETECTORS if "labels" in detectors.get(n).needs]
TEXT_DETECTORS = [
    n for n in COMPUTED_DETECTORS if not detectors.get(n).needs & (GENERATION_FEATURES | {"labels"})
]
FEATURE_DETECTORS = [n for n in COMPUTED_DETECTORS if detectors.get(n).needs & GENERATION_FEATURES]


@pytest.mark.parametrize("name", TRAINED_DETECTORS)
def test_supervised_detector_outside_a_run_says_it_needs_one(name):
    det = _build(detectors, name)
    scores = det.score([FAITHFUL, INVENTED], RunContext(examples=EXAMPLES))
    assert [s.response_id for s in scores] == ["good", "bad"]
    assert all(s.value is None and "within a run" in s.error for s in scores)


@pytest.mark.parametrize("name", FEATURE_DETECTORS)
def test_detector_without_generation_features_says_what_is_missing(name):
    det = _build(detectors, name)
    scores = det.score([FAITHFUL, INVENTED], RunContext(examples=EXAMPLES))
    assert [s.response_id for s in scores] == ["good", "bad"]
    for s in scores:
        assert s.value is None and s.error, f"{name} must explain a missing feature"


# Detectors whose value on the mock backend means nothing: the mock's hidden
# states are hashes of single tokens. Their formula and sign are tested against
# a direct transformers pass in tests/whitebox/test_self_evaluation.py.
NO_SIGN_ON_THE_MOCK = {"surprisal"}


@pytest.mark.parametrize("name", TEXT_DETECTORS)
def test_detector_sign_order_invariance_and_missing_inputs(name):
    det = _build(detectors, name)
    run = RunContext(examples=EXAMPLES)
    responses = [FAITHFUL, INVENTED]
    forward = {x.response_id: x for x in det.score(responses, run)}
    backward = {x.response_id: x for x in det.score(responses[::-1], run)}
    assert forward == backward
    assert all(x.detector == det.key for x in forward.values())
    if name not in NO_SIGN_ON_THE_MOCK:
        assert forward["good"].value < forward["bad"].value, "higher must mean more hallucinated"
    if "context" in det.needs:
        (missing,) = det.score([NO_REFERENCE], run)
        assert missing.value is None and missing.error
