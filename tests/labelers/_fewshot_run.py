"""A constructed run for the few-shot judges' tests: a known split and known human labels.

Each example ``<dataset>/<i>`` asks for the capital of land ``i`` (reference
``City<i>``) and has two responses: ``.../good`` answers ``City<i>`` (human:
not hallucinated) and ``.../bad`` answers ``Zorblax <i>`` (human:
hallucinated). Every fifth example also has ``.../unlabelled``, with no human
label. Two more examples of the calibration split must never be shown: one
without references, one whose labelled response is empty.
"""

from __future__ import annotations

import json
from pathlib import Path

from realitycheck import Example, Label, Response, RunStore
from realitycheck.analysis import CALIBRATION, split_of

# The mock grades an answer that starts with Zorblax as incorrect, any other as correct.
MOCK = {
    "name": "mock",
    "params": {
        "reply": '{"verdict": "correct"}',
        "replies": ['answer to grade: "Zorblax=>{{"verdict": "incorrect"}}'],
    },
}


def calibration_id(prefix: str) -> str:
    """Return the first id ``<prefix>-<n>`` that falls in the calibration split."""
    n = 0
    while split_of([f"{prefix}-{n}"])[0] != CALIBRATION:
        n += 1
    return f"{prefix}-{n}"


def build_run(path: Path, *, n: int = 40, datasets: tuple[str, ...] = ("t",)) -> RunStore:
    """Write the run described in the module docstring under ``path``."""
    store = RunStore(path)
    examples, responses, labels = [], [], []
    for ds in datasets:
        for i in range(n):
            eid = f"{ds}/{i}"
            examples.append(
                Example(
                    example_id=eid,
                    dataset=ds,
                    task="qa",
                    question=f"What is the capital of land {i}?",
                    references=(f"City{i}",),
                )
            )
            for kind, text, bad in (("good", f"City{i}", False), ("bad", f"Zorblax {i}", True)):
                rid = f"{eid}/{kind}"
                responses.append(Response(response_id=rid, example_id=eid, model=kind, text=text))
                labels.append(Label(response_id=rid, labeler="human", hallucinated=bad))
            if i % 5 == 0:
                responses.append(
                    Response(
                        response_id=f"{eid}/unlabelled",
                        example_id=eid,
                        model="other",
                        text=f"Perhaps City{i}",
                    )
                )
        noref, empty = calibration_id(f"{ds}/noref"), calibration_id(f"{ds}/empty")
        examples.append(Example(example_id=noref, dataset=ds, task="qa", question="Who?"))
        examples.append(
            Example(example_id=empty, dataset=ds, task="qa", question="Where?", references=("X",))
        )
        for eid, text in ((noref, "Zorblax"), (empty, "")):
            rid = f"{eid}/r"
            responses.append(Response(response_id=rid, example_id=eid, model="bad", text=text))
            labels.append(Label(response_id=rid, labeler="human", hallucinated=True))
    for records in (examples, responses, labels):
        store.append(records)
    return store


def human(store: RunStore) -> dict[str, bool]:
    """The run's human verdicts, by response id."""
    return {x.response_id: bool(x.hallucinated) for x in store.read(Label) if x.labeler == "human"}


def mine(store: RunStore, key: str) -> dict[str, Label]:
    """The labels of ``key`` in the run, by response id."""
    return {x.response_id: x for x in store.read(Label) if x.labeler == key}


def raw(label: Label) -> dict:
    """The label's raw JSON."""
    return json.loads(label.raw)


def side(response_id: str) -> str:
    """The split of a response of this run (its example id is the id up to the last slash)."""
    return str(split_of([response_id.rsplit("/", 1)[0]])[0])


def worked_examples(prompt: str) -> list[dict]:
    """The worked examples a prompt shows, read back from its JSON list."""
    start = prompt.index("worked examples:\n") + len("worked examples:\n")
    end = prompt.index("\nquestion: ", start)
    return json.loads(prompt[start:end])
