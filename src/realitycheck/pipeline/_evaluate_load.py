"""What evaluate reads from a run: one row per response, one column per labeler and detector.

Only the columns evaluate uses are read, as Arrow (never the response texts);
labels and scores are placed into the response rows by Arrow's hash look-up
(``pyarrow.compute.index_in``), one NumPy array per table, instead of
pivoting record frames of Python strings. The tables equal
those of :class:`~realitycheck.store.RunData` (``wide_verdicts``,
``wide_label_scores``, ``wide_scores``) reindexed on the run's responses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from realitycheck.analysis import split_of
from realitycheck.errors import InvalidInputError
from realitycheck.pipeline._slices import declared_columns, slice_columns
from realitycheck.store import RunStore

__all__ = ["Frame", "load_frame"]


@dataclass(frozen=True, kw_only=True)
class Frame:
    """A run as evaluate sees it; every table has one row per usable response, in run order."""

    # response_id, example_id, model, dataset, task, split[, prompt_variant][, slice:<c>]
    base: pd.DataFrame
    labels: pd.DataFrame  # index response_id, columns labeler keys: 1.0 / 0.0 / NaN
    label_scores: pd.DataFrame  # index response_id, columns labeler keys: score / NaN
    scores: pd.DataFrame  # index response_id, columns detector keys: value / NaN


def _positions(values: pa.ChunkedArray, value_set: pa.ChunkedArray) -> np.ndarray:
    """Position of each value in ``value_set`` (whose values are distinct), -1 where absent."""
    found = pc.index_in(values, value_set=value_set.combine_chunks())
    return found.fill_null(-1).to_numpy().astype(np.intp)


def _base(
    store: RunStore, responses: pa.Table, calibration_fraction: float, slice_by: tuple[str, ...]
) -> pd.DataFrame:
    """The responses that point at a known example, with dataset, task and split."""
    examples = store.arrow("examples", columns=["dataset", "task"])
    at = _positions(responses.column("example_id"), examples.column("example_id"))
    known = at >= 0
    kept = pa.array(np.flatnonzero(known))
    found = pa.array(at[known])
    example_ids = responses.column("example_id").take(kept)
    # The split hashes each distinct example id once.
    distinct = pc.unique(example_ids)
    codes = _positions(example_ids, pa.chunked_array([distinct]))
    split = split_of(distinct.to_pylist(), calibration_fraction)
    base = pd.DataFrame(
        {
            "response_id": responses.column("response_id").take(kept).to_pandas(),
            "example_id": example_ids.to_pandas(),
            "model": responses.column("model").take(kept).to_pandas(),
            "dataset": examples.column("dataset").take(found).to_pandas(),
            "task": examples.column("task").take(found).to_pandas(),
            "split": pd.Categorical(split[codes]),
        }
    )
    if "prompt_variant" in slice_by:
        base["prompt_variant"] = responses.column("prompt_variant").take(kept).to_pandas()
    if declared_columns(slice_by):
        metas = responses.column("meta").take(kept).to_pandas()
        base = base.assign(**slice_columns(metas, slice_by))
    return base


def _wide(
    rows: np.ndarray, keys: pa.ChunkedArray, values: np.ndarray, ids: pd.Index, name: str
) -> pd.DataFrame:
    """Values placed at (response row, key column); NaN where a response has none.

    ``rows`` are positions in ``ids`` (-1 for records of unknown responses,
    which are left out); columns are the sorted keys of every record.
    """
    distinct = pc.unique(keys)
    columns = sorted(distinct.to_pylist())
    codes = _positions(keys, pa.chunked_array([pa.array(columns, pa.string())]))
    out = np.full((len(ids), len(columns)), np.nan)
    kept = rows >= 0
    out[rows[kept], codes[kept]] = values[kept]
    return pd.DataFrame(out, index=ids, columns=pd.Index(columns, name=name, dtype=object))


def _stray_note(name: str, response_ids: pa.ChunkedArray, rows: np.ndarray) -> list[str]:
    stray = rows < 0
    if not stray.any():
        return []
    ids = pc.unique(response_ids.filter(pa.array(stray))).slice(0, 3).to_pylist()
    return [
        f"{int(stray.sum())} {name} point at responses the run does not hold "
        f"(e.g. {ids}); they are reported here and not used."
    ]


def load_frame(
    store: RunStore, calibration_fraction: float, slice_by: tuple[str, ...], notes: list[str]
) -> Frame:
    """Read the run's responses, labels and scores as evaluate's tables.

    Notes are appended for responses of unknown examples and for labels or
    scores of unknown responses (both are left out).

    Raises:
        InvalidInputError: The run holds no responses, or a ``slice_by``
            column is neither built in nor declared by a response.
    """
    wanted = ["example_id", "model"]
    wanted += ["prompt_variant"] if "prompt_variant" in slice_by else []
    wanted += ["meta"] if declared_columns(slice_by) else []
    responses = store.arrow("responses", columns=wanted)
    if responses.num_rows == 0:
        raise InvalidInputError(
            f"The run at {store.location} holds no responses; load a dataset or generate first."
        )
    base = _base(store, responses, calibration_fraction, slice_by)
    orphans = responses.num_rows - len(base)
    if orphans:
        notes.append(f"{orphans} responses point at unknown examples and are excluded.")
    ids = pd.Index(base["response_id"], name="response_id")
    known = pa.chunked_array([pa.array(base["response_id"], pa.string())])
    labels = store.arrow("labels", columns=["labeler", "hallucinated", "score"])
    scores = store.arrow("scores", columns=["detector", "value"])
    label_ids, score_ids = labels.column("response_id"), scores.column("response_id")
    label_rows, score_rows = _positions(label_ids, known), _positions(score_ids, known)
    notes += _stray_note("labels", label_ids, label_rows)
    notes += _stray_note("scores", score_ids, score_rows)
    labelers = labels.column("labeler")
    return Frame(
        base=base,
        labels=_wide(label_rows, labelers, _floats(labels.column("hallucinated")), ids, "labeler"),
        label_scores=_wide(label_rows, labelers, _floats(labels.column("score")), ids, "labeler"),
        scores=_wide(
            score_rows,
            scores.column("detector"),
            _floats(scores.column("value")),
            ids,
            "detector",
        ),
    )


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    """Booleans or numbers (null for missing) as float64: True 1.0, False 0.0, null NaN."""
    values = column.cast(pa.float64()).to_numpy(zero_copy_only=False)
    return np.asarray(values, dtype=np.float64)
