"""A toy QA run and a study that always fails, importable by spawned study workers.

Study workers are fresh interpreters (``spawn``): a ``monkeypatch`` made in the
test process does not reach them, so a study that must fail inside a worker
is a class of its own, defined in a module the worker can import.
"""

import numpy as np

from realitycheck import RunStore
from realitycheck.records import Example, Label, Response, Score
from realitycheck.studies.qa_accuracy import QaAccuracy


def toy_store(path):
    """Two generators x 20 QA questions, human and judge labels, one length-like score."""
    rng = np.random.default_rng(0)
    store = RunStore(path)
    examples = [
        Example(example_id=f"q/{i}", dataset="toy", task="qa", question="?", references=("x",))
        for i in range(20)
    ]
    responses, labels, scores = [], [], []
    for i in range(20):
        for k, model in enumerate(("org/a", "org/b")):
            rid = f"q/{i}/{k}"
            text = "Paris is the answer. " * (1 + i % 4)
            responses.append(Response(response_id=rid, example_id=f"q/{i}", model=model, text=text))
            wrong = bool(rng.random() < 0.3 + 0.3 * k)
            labels.append(Label(response_id=rid, labeler="human", hallucinated=wrong))
            labels.append(Label(response_id=rid, labeler="judge", hallucinated=not wrong))
            scores.append(Score(response_id=rid, detector="d1", value=float(rng.random() + wrong)))
    for records in (examples, responses, labels, scores):
        store.append(records)
    return store


class BrokenQaAccuracy(QaAccuracy):
    """qa_accuracy (same name and key) whose analysis always raises, wherever it runs."""

    def analyse(self, data, bootstrap):
        raise ValueError("forced failure in a study worker")


class DyingQaAccuracy(QaAccuracy):
    """qa_accuracy whose analysis ends its process at once, as a crash in native code would."""

    def analyse(self, data, bootstrap):
        import os

        os._exit(3)


class EnvironmentQaAccuracy(QaAccuracy):
    """qa_accuracy whose finding is its process's OPENBLAS_THREAD_TIMEOUT (or "unset")."""

    def analyse(self, data, bootstrap):
        import os

        return self._result(os.environ.get("OPENBLAS_THREAD_TIMEOUT", "unset"))


def record_workers(monkeypatch, module, name, *, run_with=None):
    """Replace ``module.name`` by a spy that records each call's ``workers`` argument.

    The spy then calls the real function, with ``workers=run_with`` when given
    (e.g. 1, to keep a test that only checks the argument off the pool).
    Returns the list the values are appended to.
    """
    given = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        given.append(kwargs["workers"])
        if run_with is not None:
            kwargs["workers"] = run_with
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return given


def run_made(path, monkeypatch, made, **kwargs):
    """``run_studies`` on a toy run at ``path`` with the study objects ``made`` (any keys)."""
    from realitycheck.runner import _studies, run_studies

    monkeypatch.setattr(_studies, "build_studies", lambda keys, reference=None: made)
    return run_studies(toy_store(path), ["ignored"], **kwargs)
