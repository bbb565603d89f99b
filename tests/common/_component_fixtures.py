"""What the checks of every registered component share: minimal parameters and a tiny run."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from realitycheck import Example, Label, Response, RunStore, Score

FAMILIES = ("datasets", "backends", "labelers", "detectors", "retrievers", "studies")

MINIMAL: dict[tuple[str, str], dict[str, object]] = {
    # The least a user must give; every other registered component builds with none.
    ("datasets", "files"): {"path": "my.csv"},
    ("datasets", "mcq_file"): {"path": "quiz.csv"},
    ("retrievers", "bm25"): {"corpus": "passages.jsonl"},  # building it reads nothing
    ("detectors", "recorded"): {"source": "hhem"},
    ("detectors", "finetuned"): {"model": "/models/tiny"},  # building it loads nothing
    ("backends", "openai"): {"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1"},
    ("backends", "hf"): {"model": "/models/tiny"},  # needs a model; building it loads nothing
    ("backends", "vllm"): {"model": "/models/tiny"},  # likewise
    ("backends", "hf_seq2seq"): {"model": "/models/tiny"},  # likewise
    # Labelers that run a published checkpoint: building them loads nothing.
    ("labelers", "unieval"): {"model": "/models/tiny-t5"},
    ("labelers", "critic"): {"model": "/models/tiny-critic"},
    ("labelers", "q2"): {"generator": "/models/tiny-t5", "reader": "/models/tiny-reader"},
    # The pair classifiers: the mock's word-overlap stand-in for an NLI model.
    ("labelers", "nli"): {"judge": "mock"},
    ("detectors", "nli_grounding"): {"judge": "mock"},
    ("detectors", "cross_encoder"): {"judge": "mock"},
    ("detectors", "claim_check"): {"judge": "mock"},
    ("detectors", "selfcheck_nli"): {"judge": "mock"},
    # A judge needs a backend: the mock, scripted to grade the invented answer as wrong.
    ("labelers", "qa_judge"): {
        "judge": {
            "name": "mock",
            "params": {
                "reply": '{"verdict": "correct"}',
                "replies": ['Zorblax=>{{"verdict": "incorrect"}}'],
            },
        }
    },
    ("labelers", "factuality_judge"): {
        "judge": {
            "name": "mock",
            "params": {"reply": '{"choice": "C"}', "replies": ['Zorblax=>{{"choice": "D"}}']},
        }
    },
    ("labelers", "faithfulness_judge"): {
        "judge": {
            "name": "mock",
            "params": {
                "reply": '{"verdict": "supported"}',
                "replies": ['Zorblax=>{{"verdict": "unsupported"}}'],
            },
        }
    },
    ("labelers", "faithjudge"): {
        "judge": {
            "name": "mock",
            "params": {
                "reply": '{"verdict": "consistent"}',
                "replies": ['response to grade: "Zorblax=>{{"verdict": "unwanted"}}'],
            },
        }
    },
    # Few-shot judges grade by the run's labels: outside a run they say so (test_components).
    ("labelers", "fewshot_judge"): {"judge": "mock"},
    ("labelers", "optimized_judge"): {"judge": "mock"},
    # Claims: the split round quotes the response, the check round the claims.
    ("labelers", "claim_judge"): {
        "judge": {
            "name": "mock",
            "params": {
                "reply": '{"verdicts": [{"verdict": "supported"}]}',
                "replies": [
                    'break into claims: "Zorblax=>{{"claims": ["Zorblax built it in 1642."]}}',
                    'break into claims:=>{{"claims": ["The tower was completed in 1889."]}}',
                    'claims to check: \\["Zorblax=>{{"verdicts": [{{"verdict": "unsupported"}}]}}',
                ],
            },
        }
    },
    # Self-evaluation: the mock says yes, except to the invented answer.
    ("detectors", "p_true"): {
        "judge": {"name": "mock", "params": {"reply": "Yes", "replies": ["Zorblax=>No"]}}
    },
    ("detectors", "surprisal"): {"judge": "mock"},
    ("detectors", "selfcheck_prompt"): {"judge": {"name": "mock", "params": {"reply": "Yes"}}},
}


def minimal(family: str, name: str) -> dict[str, object]:
    """Return the parameters ``name`` of ``family`` is built with in these checks."""
    return dict(MINIMAL.get((family, name), {}))


def tiny_store(path: Path, seed: int = 0) -> RunStore:
    """Two datasets, two generators, human labels of two annotators, two labelers, two detectors."""
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    for ds, task in (("alpha", "rag_qa"), ("beta", "qa")):
        for i in range(24):
            eid = f"{ds}/{i}"
            context = "The tower is 330 metres tall. " * int(rng.integers(1, 30))
            examples.append(
                Example(
                    example_id=eid,
                    dataset=ds,
                    task=task,
                    question=f"How tall is tower {i}?",
                    context=context if task == "rag_qa" else "",
                    references=("330 metres",),
                )
            )
            for model in ("gen-a", "gen-b"):
                rid = f"{eid}/{model}"
                bad = bool(rng.random() < 0.4)
                text = "It is 120 metres tall, built on Mars." if bad else "It is 330 metres."
                text += " Really." * int(rng.integers(0, 5))
                responses.append(Response(response_id=rid, example_id=eid, model=model, text=text))
                labels.append(Label(response_id=rid, labeler="human", hallucinated=bad))
                for annotator in ("a", "b"):
                    flip = bool(rng.random() < 0.1)
                    labels.append(
                        Label(
                            response_id=rid, labeler=f"human:{annotator}", hallucinated=bad != flip
                        )
                    )
                for labeler, noise in (("rouge_l", 0.15), ("token_f1", 0.3)):
                    flip = bool(rng.random() < noise)
                    value = float(bad != flip) * 0.5 + 0.5 * float(rng.random())
                    labels.append(
                        Label(
                            response_id=rid, labeler=labeler, hallucinated=value > 0.5, score=value
                        )
                    )
                scores.append(
                    Score(response_id=rid, detector="noisy", value=float(bad) + float(rng.normal()))
                )
                scores.append(Score(response_id=rid, detector="length", value=float(len(text))))
    for records in (examples, responses, labels, scores):
        store.append(records)
    return store
