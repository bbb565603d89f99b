"""What every supervised detector shares: training on the calibration split of each dataset.

A supervised detector (``probe``, ``finetuned``) is trained, per dataset, on
the responses of the calibration split (:func:`realitycheck.analysis.split_of`
of their example ids, the split evaluate chooses thresholds on) that carry a
verdict of the labeler ``train_labels`` in the run, and scores the responses
of the test split. A calibration response gets ``value=None`` and says it
trained the detector, so no metric is ever measured on training data.

Before any feature is computed, each dataset's training labels are checked:
fewer than ``min_train`` labelled calibration responses, or only one class,
is an error of that dataset alone (every response of it gets ``value=None``
with the reason); the other datasets still train and score.

The trained weights are written into the run,
``models/<detector key>/<dataset>/`` (on object storage: written to a local
temporary folder first, then each file as one object under that prefix),
and their SHA-256
(:func:`weights_sha256`: over the weight arrays, not the file bytes, so it is
the same for the same weights whatever the file format writes around them)
goes into the spec stored with every score, under ``trained``.

The detect stage hands a detector batches of responses; a dataset larger than
one batch is trained once per batch, on the same calibration responses with
the same seed, so every batch gets the same model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from realitycheck.detectors._base import Detector, RunContext
from realitycheck.params import Interval, NonEmptyStr, param
from realitycheck.records import Example, Response, Score

if TYPE_CHECKING:
    from realitycheck.store import RemoteFolder, RunStore

__all__ = [
    "MIN_TRAIN",
    "SupervisedDetector",
    "TrainingSet",
    "source_text",
    "take",
    "training_problem",
    "weights_sha256",
]

MIN_TRAIN = 20
"""The default fewest labelled calibration responses a supervised detector trains on."""

MODELS_DIR = "models"


def weights_sha256(arrays: Mapping[str, np.ndarray]) -> str:
    """Return the SHA-256 of named weight arrays, independent of how they are stored.

    The digest runs over the arrays in name order; for each, its name, dtype,
    shape and C-ordered bytes. The same weights give the same hash whether they
    sit in an ``.npz`` or a ``.safetensors`` file.
    """
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode("utf-8") + b"\0" + a.dtype.str.encode("ascii"))
        h.update(repr(a.shape).encode("ascii") + b"\0")
        h.update(a.tobytes())
    return h.hexdigest()


def source_text(example: Example) -> str:
    """Return what a response is checked against: the question and the context, joined.

    Either may be empty (HaluEval-general has no context; a summary's question
    is its instruction); both empty gives ``""``.
    """
    return "\n\n".join(part for part in (example.question.strip(), example.context.strip()) if part)


def training_problem(
    name: str, dataset: str, y: np.ndarray, *, train_labels: str, min_train: int
) -> str:
    """Return why ``y`` (0/1 training labels of one dataset) cannot train, or ``""``.

    Args:
        name: The detector's name, for the message.
        dataset: The dataset the labels belong to.
        y: The training labels, 1 = hallucinated.
        train_labels: The labeler key they come from.
        min_train: The fewest labels accepted.
    """
    where = f"{name} cannot train on dataset {dataset!r}"
    if y.size < min_train:
        return (
            f"{where}: {y.size} calibration responses carry a {train_labels!r} verdict "
            f"(with the features it needs), fewer than min_train={min_train}"
        )
    positives = int(y.sum())
    if positives in (0, y.size):
        which = "hallucinated" if positives else "not hallucinated"
        return (
            f"{where}: all {y.size} {train_labels!r} training labels of its calibration "
            f"split say {which}; a classifier needs both classes"
        )
    return ""


@dataclass(frozen=True)
class TrainingSet:
    """The responses of one dataset, split into what trains and what is scored.

    Attributes:
        dataset: The dataset.
        train: Calibration responses with a verdict of the training labeler.
        y: Their verdicts, 1.0 = hallucinated.
        scored: The test-split responses to score.
    """

    dataset: str
    train: list[Response]
    y: np.ndarray
    scored: list[Response]


def take(inputs: Any, rows: Sequence[int]) -> Any:
    """Rows of a feature frame or matrix, or items of a list of inputs."""
    if hasattr(inputs, "iloc"):
        return inputs.iloc[list(rows)]
    if isinstance(inputs, np.ndarray):
        return inputs[list(rows)]
    return [inputs[i] for i in rows]


def _verdicts(store: RunStore, key: str) -> dict[str, float]:
    """Return ``key``'s verdicts in the run by response id (1.0 / 0.0), without ``None``."""
    labels = store.frame("labels", columns=["hallucinated"])
    mine = labels[(labels["labeler"] == key) & labels["hallucinated"].notna()]
    return {
        rid: float(bool(h))
        for rid, h in zip(mine["response_id"], mine["hallucinated"], strict=True)
    }


@dataclass(frozen=True, kw_only=True)
class SupervisedDetector(Detector):
    """Base of the detectors trained on the calibration split; see the module docstring.

    Subclasses define what a response becomes (:meth:`inputs`), how a model is
    fitted (:meth:`fit`), how it scores (:meth:`predict`: the probability of
    *hallucinated*, in [0, 1], higher = more likely hallucinated) and how it is
    saved (:meth:`save`). The ``train-noise`` study calls the same methods
    with noisy labels.

    Args:
        train_labels: The labeler whose verdicts train the detector (``human``,
            ``rouge_l``, ``knowledge_f1``, a judge key…), as stored in the run.
        min_train: Fewest labelled calibration responses of a dataset it trains on.
        seed: Seed of everything random in training.
    """

    train_labels: str = param("human", NonEmptyStr(), doc="labeler whose verdicts train it")
    min_train: int = param(MIN_TRAIN, Interval(int, 2), doc="fewest training responses")
    seed: int = param(0, Interval(int, 0), doc="seed of the training")
    needs: ClassVar[frozenset[str]] = frozenset({"labels"})

    # -- what subclasses implement ---------------------------------------------------------

    def inputs(self, responses: Sequence[Response], run: RunContext) -> tuple[Any, list[str]]:
        """Return the model inputs of the responses, and per response an error (``""``: fine)."""
        raise NotImplementedError

    def fit(self, inputs: Any, y: np.ndarray) -> Any:
        """Return a model fitted on ``inputs`` (all valid) with labels ``y`` (1 = hallucinated)."""
        raise NotImplementedError

    def predict(self, model: Any, inputs: Any) -> np.ndarray:
        """Return P(hallucinated) for each input, in [0, 1]."""
        raise NotImplementedError

    def save(self, model: Any, folder: Path) -> dict[str, np.ndarray]:
        """Write the model's weights into ``folder``; return the arrays written (for the hash).

        ``folder`` is new and empty; the caller puts it in place whole when this returns.
        """
        raise NotImplementedError

    def feature_names(self, inputs: Any) -> list[str]:
        """Name what the inputs hold, for the spec of the scores (empty: nothing to add)."""
        return []

    # -- the shared loop -------------------------------------------------------------------

    def fit_valid(self, inputs: Any, errors: Sequence[str], y: np.ndarray) -> tuple[Any, int]:
        """Fit on the rows without an error; return the model and how many rows it used."""
        rows = [i for i, e in enumerate(errors) if not e]
        return self.fit(take(inputs, rows), y[rows]), len(rows)

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order: test responses scored, others ``None``."""
        if run.store is None:
            why = f"{self.name} trains on the run's labels; score it within a run (detect stage)"
            return [self._score(r, None, error=why) for r in responses]
        by_id: dict[str, Score] = {}
        for part in self.training_sets(responses, run, run.store):
            by_id.update(self._train_and_score(part, run, run.store))
        for r in responses:
            if r.response_id not in by_id:
                why = (
                    f"in the calibration split, which trains {self.name} "
                    "(it scores the test split only)"
                )
                by_id[r.response_id] = self._score(r, None, error=why)
        return [by_id[r.response_id] for r in responses]

    def training_sets(
        self, responses: Sequence[Response], run: RunContext, store: RunStore
    ) -> list[TrainingSet | tuple[str, list[Response], str]]:
        """Per dataset of ``responses``: its training set, or ``(dataset, responses, why not)``."""
        # analysis (and metrics under it) loads here, not when the registry lists detectors.
        from realitycheck.analysis import CALIBRATION, split_of

        examples = run.examples
        wanted: dict[str, list[Response]] = {}
        for r in responses:
            ds = examples[r.example_id].dataset if r.example_id in examples else ""
            wanted.setdefault(ds, []).append(r)
        verdicts = _verdicts(store, self.train_labels)
        pool = [r for r in store.read(Response) if r.example_id in examples]
        out: list[TrainingSet | tuple[str, list[Response], str]] = []
        for ds, batch in sorted(wanted.items()):
            members = [r for r in pool if examples[r.example_id].dataset == ds]
            calibration = {
                r.response_id
                for r, side in zip(members, split_of([r.example_id for r in members]), strict=True)
                if side == CALIBRATION
            }
            train = [
                r for r in members if r.response_id in calibration and r.response_id in verdicts
            ]
            y = np.array([verdicts[r.response_id] for r in train], dtype=float)
            problem = training_problem(
                self.name, ds, y, train_labels=self.train_labels, min_train=self.min_train
            )
            if problem:
                out.append((ds, batch, problem))
                continue
            scored = [r for r in batch if r.response_id not in calibration]
            out.append(TrainingSet(dataset=ds, train=train, y=y, scored=scored))
        return out

    def _train_and_score(
        self,
        part: TrainingSet | tuple[str, list[Response], str],
        run: RunContext,
        store: RunStore,
    ) -> dict[str, Score]:
        if isinstance(part, tuple):
            _, batch, problem = part
            return {r.response_id: self._score(r, None, error=problem) for r in batch}
        if not part.scored:
            return {}
        inputs, errors = self.inputs([*part.train, *part.scored], run)
        n = len(part.train)
        train_rows = [i for i in range(n) if not errors[i]]
        y = part.y[train_rows]
        problem = training_problem(
            self.name, part.dataset, y, train_labels=self.train_labels, min_train=self.min_train
        )
        if problem:
            return {r.response_id: self._score(r, None, error=problem) for r in part.scored}
        model = self.fit(take(inputs, train_rows), y)
        trained = self._save(model, store, part.dataset, len(train_rows), y)
        features = self.feature_names(inputs)
        if features:
            trained["features"] = features
        scored_rows = [i for i in range(n, n + len(part.scored)) if not errors[i]]
        values = self.predict(model, take(inputs, scored_rows)) if scored_rows else np.empty(0)
        value_of = dict(zip(scored_rows, values, strict=True))
        out = {}
        for i, r in enumerate(part.scored, start=n):
            if errors[i]:
                out[r.response_id] = self._score(r, None, error=errors[i])
            else:
                out[r.response_id] = self._trained_score(r, float(value_of[i]), trained)
        return out

    def _save(
        self, model: Any, store: RunStore, dataset: str, n_train: int, y: np.ndarray
    ) -> dict[str, Any]:
        from realitycheck.store import atomic_folder, folder_name

        relative = Path(MODELS_DIR) / folder_name(self.key) / folder_name(dataset)
        if store.remote is None:  # the folder appears whole, replacing an older one
            (store.path / relative).parent.mkdir(parents=True, exist_ok=True)
            with atomic_folder(store.path / relative) as folder:
                arrays = self.save(model, folder)
        else:
            arrays = self._upload(model, store.remote, relative.as_posix())
        return {
            "dataset": dataset,
            "weights": relative.as_posix(),
            "sha256": weights_sha256(arrays),
            "n_train": n_train,
            "n_positive": int(y.sum()),
            "train_labels": self.train_labels,
        }

    def _upload(self, model: Any, remote: RemoteFolder, prefix: str) -> dict[str, np.ndarray]:
        """Save into a local temporary folder, then write each file as one object under ``prefix``.

        An object is written whole or not at all, so a reader never sees half a file.
        """
        import tempfile

        with tempfile.TemporaryDirectory(prefix="realitycheck-weights-") as tmp:
            arrays = self.save(model, Path(tmp))
            for path in sorted(Path(tmp).rglob("*")):
                if path.is_file():
                    name = f"{prefix}/{path.relative_to(tmp).as_posix()}"
                    remote.write_bytes(name, path.read_bytes())
        return arrays

    def _trained_score(self, response: Response, value: float, trained: dict[str, Any]) -> Score:
        spec = json.dumps({**self.spec, "trained": trained}, sort_keys=True, default=str)
        return Score(response_id=response.response_id, detector=self.key, value=value, spec=spec)
