"""A tiny synthetic dataset, registered in a private registry (not the global one)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from realitycheck import Bundle, Dataset, Example, Label, Response, Score
from realitycheck.registry import Registry

_private: Registry[Dataset] = Registry("datasets", "realitycheck.errors")


@_private.register("tiny")
@dataclass(frozen=True, kw_only=True)
class Tiny(Dataset):
    """Forty examples, two generators, human labels and one recorded detector."""

    n_examples: int = 40
    seed: int = 0

    def load(self, *, progress=None) -> Bundle:
        rng = np.random.default_rng(self.seed)
        examples, responses, labels, scores = [], [], [], []
        for i in range(self.n_examples):
            eid = f"tiny/{i}"
            examples.append(
                Example(
                    example_id=eid,
                    dataset="tiny",
                    task="qa" if i % 2 else "summary",
                    question=f"What is item {i}?",
                    context=f"Item {i} is a red apple from Kent.",
                    references=(f"a red apple {i}",),
                )
            )
            for model in ("m1", "m2"):
                rid = f"{eid}/{model}"
                bad = bool(rng.random() < 0.4)
                text = f"Item {i} is a {'blue pear from Mars' if bad else 'red apple'}."
                responses.append(Response(response_id=rid, example_id=eid, model=model, text=text))
                labels.append(Label(response_id=rid, labeler="human", hallucinated=bad))
                value = float(bad) * 0.5 + rng.random()
                scores.append(Score(response_id=rid, detector="recorded:noisy", value=value))
        return Bundle(
            examples=examples,
            responses=responses,
            labels=labels,
            scores=scores,
            notes=["synthetic"],
        )


@pytest.fixture
def tiny() -> Tiny:
    return Tiny()
