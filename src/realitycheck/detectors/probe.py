"""A probe: a small classifier on features a run already has, trained on the calibration split."""

from __future__ import annotations

import fnmatch
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from realitycheck.detectors._base import RunContext, detector, detectors
from realitycheck.detectors._features import hidden_vector
from realitycheck.detectors._supervised import SupervisedDetector, source_text
from realitycheck.errors import MissingDependencyError, MissingFeatureError
from realitycheck.params import (
    InstanceOf,
    Interval,
    NonEmptyStr,
    OneOf,
    OrNone,
    SequenceOf,
    as_tuple,
    param,
    param_error,
)
from realitycheck.records import Response

__all__ = ["Probe", "score_features"]

Classifier = Literal["logistic", "mlp"]
Hidden = Literal["none", "last", "mean"]

MLP_HIDDEN = 64
"""Units of the MLP's one hidden layer."""


def _sklearn(purpose: str) -> Any:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise MissingDependencyError("scikit-learn", extra="supervised", purpose=purpose) from None


def _supervised_names() -> set[str]:
    """Names of the registered detectors that train (never a probe's features)."""
    return {
        name for name in detectors.names() if issubclass(detectors.get(name), SupervisedDetector)
    }


def score_features(patterns: Sequence[str], available: Sequence[str]) -> list[str]:
    """Return the detector keys of ``available`` matched by ``patterns`` (``fnmatch``), sorted.

    A key matches itself, brackets included (``length[unit=chars]``, which as
    a pattern alone would be a character class); ``*`` and ``length*`` match
    many. Keys of supervised detectors (``probe``, ``finetuned``) are never
    matched.
    """
    trained = _supervised_names()
    keep = [k for k in available if k.split("[", 1)[0] not in trained]
    return sorted({k for k in keep for p in patterns if k == p or fnmatch.fnmatchcase(k, p)})


@detector("probe")
@dataclass(frozen=True, kw_only=True)
class Probe(SupervisedDetector):
    """A logistic regression or a small MLP on embeddings, hidden states or other scores.

    Per dataset, it is fitted on the calibration split with the verdicts of
    ``train_labels`` and scores the test split (see
    :mod:`realitycheck.detectors._supervised`); ``value`` is the fitted
    P(hallucinated), in [0, 1], higher = more likely hallucinated. Features,
    concatenated in this order:

    - ``embedding``: all-MiniLM-L6-v2 embeddings ``u`` of the source (the
      question and the context, :func:`~realitycheck.detectors._supervised.source_text`,
      truncated by the model to 256 word pieces) and ``v`` of the response,
      as ``[u, v, u * v]`` (1,152 values; needs the ``embed`` extra);
    - ``hidden``: the best answer's stored hidden state (``last`` or ``mean``
      over generated tokens) at ``layer``, from a white-box backend;
    - ``scores``: the stored values of the detectors whose keys match
      ``scores`` (``fnmatch`` patterns, e.g. ``length*`` or ``*``; supervised
      detectors never match), in key order; a pattern matching nothing on a
      dataset is an error of that dataset.

    A response missing a feature is left out of training, and scored
    ``None`` with the reason. The classifier is scikit-learn's
    ``StandardScaler`` followed by ``LogisticRegression`` (L2, ``C=1``,
    lbfgs) or ``MLPClassifier`` (one hidden layer of 64 ReLU units, Adam,
    ``alpha=1e-3``, 300 epochs, ``random_state=seed``). The weights are saved
    as ``weights.npz`` (the scaler's mean and scale, then each layer's
    coefficients and intercepts) with the matched feature names in the
    score's spec. Needs the ``supervised`` extra (scikit-learn).

    Args:
        embedding: Use the MiniLM embeddings of (source, response).
        hidden: Use the best answer's hidden state: ``none``, ``last`` or ``mean``.
        layer: The hidden layer (0 = embeddings); ``None`` = the stored one.
        scores: Detector keys (``fnmatch`` patterns) whose stored values are features.
        classifier: ``logistic`` (logistic regression) or ``mlp``.
        train_labels: The labeler whose verdicts train it (``human``, ``rouge_l``…).
        min_train: Fewest labelled calibration responses of a dataset it trains on.
        seed: Seed of the MLP's initialisation and shuffling.
    """

    embedding: bool = param(True, InstanceOf(bool), doc="use MiniLM embeddings")
    hidden: Hidden = param("none", OneOf(Hidden), doc="use a stored hidden state")
    layer: int | None = param(None, OrNone(Interval(int, 0)), doc="the hidden layer")
    scores: tuple[str, ...] = param(
        (), SequenceOf(NonEmptyStr()), convert=as_tuple, doc="detector keys used as features"
    )
    classifier: Classifier = param("logistic", OneOf(Classifier), doc="the classifier")
    needs: ClassVar[frozenset[str]] = frozenset({"labels"})

    def __post_init__(self) -> None:
        """Check the parameters, then that at least one feature is asked for."""
        super().__post_init__()
        if not self.embedding and self.hidden == "none" and not self.scores:
            raise param_error(
                "scores",
                self.name,
                "a non-empty list of detector keys when embedding=false and hidden=none",
                self.scores,
                hint="A probe needs at least one kind of feature.",
            )

    def inputs(self, responses: Sequence[Response], run: RunContext) -> tuple[Any, list[str]]:
        """Return the features, one named column each (NaN where missing), and the errors."""
        import pandas as pd

        _sklearn("Training a probe")
        errors = ["" for _ in responses]
        blocks = []
        if self.scores:
            blocks.append(self._score_block(responses, run, errors))
        if self.hidden != "none":
            blocks.append(self._hidden_block(responses, errors))
        if self.embedding:
            blocks.append(self._embedding_block(responses, run, errors))
        return pd.concat(blocks, axis=1), errors

    def feature_names(self, inputs: Any) -> list[str]:
        """The features used: score keys, then ``hidden:...`` and ``embedding`` with their sizes."""
        names: list[str] = []
        for column in inputs.columns:
            group = column.split("#", 1)[0]
            if "#" not in column:
                names.append(column)
            elif group not in names:
                names.append(group)
        sizes = {g: sum(c.split("#", 1)[0] == g for c in inputs.columns) for g in names}
        return [n if sizes[n] == 1 and "#" not in n else f"{n} ({sizes[n]} values)" for n in names]

    def _score_block(
        self, responses: Sequence[Response], run: RunContext, errors: list[str]
    ) -> Any:
        import pandas as pd

        ids = [r.response_id for r in responses]
        frame = pd.DataFrame(columns=["response_id", "detector", "value"])
        if run.store is not None:
            frame = run.store.frame("scores", columns=["value"])
            frame = frame[frame["response_id"].isin(set(ids)) & frame["value"].notna()]
        keys = score_features(self.scores, sorted(frame["detector"].unique()))
        if not keys:
            why = f"no stored detector scores match {list(self.scores)}"
            for i, e in enumerate(errors):
                errors[i] = e or why
            return pd.DataFrame({"scores": np.full(len(responses), np.nan)})
        wide = frame[frame["detector"].isin(keys)].pivot(
            index="response_id", columns="detector", values="value"
        )
        block = wide.reindex(index=ids, columns=keys).astype(float).reset_index(drop=True)
        for i, row in enumerate(block.to_numpy()):
            if np.isnan(row).any() and not errors[i]:
                lacking = [k for k, v in zip(keys, row, strict=True) if np.isnan(v)]
                errors[i] = f"no stored score of {', '.join(lacking)} (a probe feature)"
        block.columns = list(keys)
        return block

    def _hidden_block(self, responses: Sequence[Response], errors: list[str]) -> Any:
        import pandas as pd

        rows: list[np.ndarray | None] = []
        for i, r in enumerate(responses):
            best = r.features.get("best") if isinstance(r.features, dict) else None
            try:
                if not isinstance(best, dict):
                    raise MissingFeatureError("the response has no features['best']")
                rows.append(hidden_vector(best, self.hidden, self.layer, "the best answer"))
            except MissingFeatureError as exc:
                rows.append(None)
                errors[i] = errors[i] or str(exc)
        width = max((v.size for v in rows if v is not None), default=1)
        out = np.full((len(responses), width), np.nan)
        for i, v in enumerate(rows):
            if v is None:
                continue
            if v.size != width:
                errors[i] = errors[i] or f"hidden state of size {v.size}, others {width}"
                continue
            out[i] = v
        where = "stored layer" if self.layer is None else f"L{self.layer}"
        return pd.DataFrame(
            out, columns=[f"hidden:{self.hidden}@{where}#{k}" for k in range(width)]
        )

    def _embedding_block(
        self, responses: Sequence[Response], run: RunContext, errors: list[str]
    ) -> Any:
        import pandas as pd

        from realitycheck.encoders.embeddings import DIMENSION, embed

        sources = []
        for i, r in enumerate(responses):
            example = run.examples.get(r.example_id)
            sources.append(source_text(example) if example is not None else "")
            if example is None:
                errors[i] = errors[i] or f"example {r.example_id!r} was not given"
        rows = [i for i, e in enumerate(errors) if not e]
        out = np.full((len(responses), 3 * DIMENSION), np.nan)
        if rows:
            u = embed([sources[i] for i in rows]).astype(np.float64)
            v = embed([responses[i].text for i in rows]).astype(np.float64)
            out[rows] = np.hstack([u, v, u * v])
        return pd.DataFrame(out, columns=[f"embedding#{k}" for k in range(3 * DIMENSION)])

    def fit(self, inputs: Any, y: np.ndarray) -> Any:
        """Return the fitted scikit-learn pipeline (scaler + classifier)."""
        _sklearn("Training a probe")
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression
        from sklearn.neural_network import MLPClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        if self.classifier == "logistic":
            model: Any = LogisticRegression(C=1.0, max_iter=2000)
        else:
            model = MLPClassifier(
                hidden_layer_sizes=(MLP_HIDDEN,), alpha=1e-3, max_iter=300, random_state=self.seed
            )
        pipeline = make_pipeline(StandardScaler(), model)
        with warnings.catch_warnings():
            # An MLP stopped at max_iter is still a fitted, usable model.
            warnings.simplefilter("ignore", ConvergenceWarning)
            pipeline.fit(np.asarray(inputs, dtype=float), y.astype(int))
        return pipeline

    def predict(self, model: Any, inputs: Any) -> np.ndarray:
        """Return P(hallucinated) of each row."""
        proba = model.predict_proba(np.asarray(inputs, dtype=float))
        column = list(model.classes_).index(1)
        return np.asarray(proba[:, column], dtype=float)

    def save(self, model: Any, folder: Path) -> dict[str, np.ndarray]:
        """Write ``weights.npz`` into ``folder``; return its arrays."""
        import io

        scaler, clf = model[0], model[-1]
        arrays = {"scaler_mean": scaler.mean_, "scaler_scale": scaler.scale_}
        if self.classifier == "logistic":
            arrays |= {"coef_0": clf.coef_, "intercept_0": clf.intercept_}
        else:
            for k, (w, b) in enumerate(zip(clf.coefs_, clf.intercepts_, strict=True)):
                arrays |= {f"coef_{k}": w, f"intercept_{k}": b}
        arrays = {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        (folder / "weights.npz").write_bytes(buffer.getvalue())
        return arrays
