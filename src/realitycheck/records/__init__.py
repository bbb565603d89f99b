"""The records that cross module boundaries.

Positive class everywhere is *hallucinated*. A :class:`Score` is always
oriented so that a higher ``value`` means "more likely hallucinated"; a
:class:`Label` with a continuous ``score`` follows the same orientation. A value
that could not be obtained is ``None`` with its raw text or error kept, never a
silent 0 or 1.

Beside the records themselves, the package holds what names and describes
them: :mod:`realitycheck.records.keys`, the grammar of the keys that name
stored labels and scores, and :mod:`realitycheck.records.model_info`, the
per-model metadata (family, size, instruction tuning, decoding) read from a
models file or a run config. Both sit on the records' floor: they import only
:mod:`realitycheck.errors` and :mod:`realitycheck.params`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from realitycheck.errors import InvalidInputError

__all__ = [
    "INVALID",
    "TASKS",
    "AgreementResult",
    "Example",
    "Label",
    "MetricResult",
    "Record",
    "Response",
    "Score",
    "Task",
    "records_from_columns",
    "records_from_rows",
    "records_to_columns",
    "records_to_rows",
]

Task = Literal["qa", "rag_qa", "summary", "data2text", "dialogue", "mcq", "open"]
TASKS: tuple[str, ...] = ("qa", "rag_qa", "summary", "data2text", "dialogue", "mcq", "open")
INVALID = "invalid"
"""The ``category`` of a label none of whose replies could be read (an LLM judge's)."""


def _check_id(value: object, name: str) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{name} must be a non-empty string. Got {value!r} instead.")


def _check_failure(record: Label | Score, key: str) -> None:
    """Check ``retryable``, ``failed`` and ``unreadable``; a retryable record is a failed one.

    ``retryable=True`` implies ``failed=True``: it is derived here (not refused),
    so code written before ``failed`` existed, which builds
    ``Label(retryable=True, error=...)``, and parts stored before it, keep working.
    """
    kind = type(record).__name__.lower()
    for name in ("retryable", "failed"):
        value = getattr(record, name)
        if not isinstance(value, bool):
            raise InvalidInputError(f"{name} must be a bool. Got {value!r} instead.")
        if value and not record.error:
            raise InvalidInputError(
                f"A {name} {kind} of {record.response_id!r} by {key!r} "
                "must say its error. Got an empty error instead."
            )
    if record.retryable and not record.failed:
        object.__setattr__(record, "failed", True)
    count = record.unreadable
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
        raise InvalidInputError(
            f"unreadable of the {kind} of {record.response_id!r} by {key!r} must be an "
            f"int >= 0. Got {count!r} instead."
        )
    if type(count) is not int:  # a NumPy integer read from a table
        object.__setattr__(record, "unreadable", int(count))


def _check_optional_float(value: object, name: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{name} must be a float or None. Got {value!r} instead.")
    if math.isnan(value):
        raise InvalidInputError(f"{name} must not be NaN; use None with an error instead.")


@dataclass(frozen=True, slots=True, kw_only=True)
class Example:
    """One input to a model.

    Attributes:
        example_id: Unique id, stable across runs (``dataset/…``).
        dataset: Name of the dataset the example comes from.
        task: One of :data:`TASKS`.
        question: The question or instruction.
        context: Source passages, article or structured data as text.
        references: Gold answers.
        incorrect_references: Known wrong answers.
        choices: Options of a multiple-choice example.
        meta: Anything else the dataset carries.
    """

    example_id: str
    dataset: str
    task: str
    question: str = ""
    context: str = ""
    references: tuple[str, ...] = ()
    incorrect_references: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    table: ClassVar[str] = "examples"
    key: ClassVar[tuple[str, ...]] = ("example_id",)

    def __post_init__(self) -> None:
        _check_id(self.example_id, "example_id")
        if self.task not in TASKS:
            raise InvalidInputError(
                f"task of example {self.example_id!r} must be one of {TASKS}. "
                f"Got {self.task!r} instead."
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    """One model output for an example.

    Attributes:
        response_id: Unique id of the response.
        example_id: The example it answers.
        model: The generator that wrote it.
        text: The output text.
        prompt_variant: Which prompt produced it.
        decoding: Decoding strategy (``greedy``, ``sampling``…), empty if unknown.
        samples: Extra stochastic generations for the same prompt.
        features: Values a backend computed at generation time.
        meta: Anything else.
    """

    response_id: str
    example_id: str
    model: str
    text: str
    prompt_variant: str = "default"
    decoding: str = ""
    samples: tuple[str, ...] = ()
    features: Mapping[str, Any] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)

    table: ClassVar[str] = "responses"
    key: ClassVar[tuple[str, ...]] = ("response_id",)

    def __post_init__(self) -> None:
        _check_id(self.response_id, "response_id")
        _check_id(self.example_id, "example_id")
        if not isinstance(self.text, str):
            raise InvalidInputError(
                f"text of response {self.response_id!r} must be a string. "
                f"Got {type(self.text).__name__} instead."
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class Label:
    """A correctness judgement of one response by one labeler.

    Attributes:
        response_id: The judged response.
        labeler: Key of the labeler (``human``, ``human:<annotator>``, ``rouge_l``…).
        hallucinated: The verdict; ``None`` when it could not be obtained.
        score: Continuous evidence, higher = more likely hallucinated.
        category: Finer verdict (``correct`` / ``incorrect`` / ``refuse``…).
        raw: The raw output behind the verdict (judge text, original label).
        error: Why the verdict is missing, if it is.
        retryable: The error may pass on a later try (a backend failure or
            timeout), so a resumed run computes the label again; ``False`` for a
            permanent error (no reference, empty text) and for no error.
        failed: No verdict because a call failed (a backend error, retryable
            or fatal); always ``True`` when ``retryable`` is. ``False`` for a
            verdict the labeler does not define (no reference) and for an
            unreadable reply.
        unreadable: How many of the labeler's replies for this response could
            not be read (a judge reply with no verdict). A label whose every
            reply was unreadable has category ``invalid`` and ``unreadable >= 1``.
        spec: JSON of the component spec that produced the label.
    """

    response_id: str
    labeler: str
    hallucinated: bool | None
    score: float | None = None
    category: str = ""
    raw: str = ""
    error: str = ""
    retryable: bool = False
    failed: bool = False
    unreadable: int = 0
    spec: str = "{}"

    table: ClassVar[str] = "labels"
    key: ClassVar[tuple[str, ...]] = ("response_id", "labeler")

    def __post_init__(self) -> None:
        _check_id(self.response_id, "response_id")
        _check_id(self.labeler, "labeler")
        if self.hallucinated is not None and not isinstance(self.hallucinated, bool):
            raise InvalidInputError(
                f"hallucinated must be a bool or None. Got {self.hallucinated!r} instead."
            )
        _check_optional_float(self.score, "score")
        _check_failure(self, self.labeler)


@dataclass(frozen=True, slots=True, kw_only=True)
class Score:
    """A detector's value for one response.

    Attributes:
        response_id: The scored response.
        detector: Key of the detector (``length[unit=words]``, ``recorded:hhem-2.1``…).
        value: Higher = more likely hallucinated, always; ``None`` on failure.
        error: Why the value is missing, if it is.
        retryable: The error may pass on a later try (a backend failure or
            timeout), so a resumed run computes the score again; ``False`` for a
            permanent error (a missing feature, empty samples) and for no error.
        failed: No value because a call failed (a backend error, retryable or
            fatal); always ``True`` when ``retryable`` is. ``False`` for a value
            the detector does not define (a missing feature) and for unreadable
            replies.
        unreadable: How many of the detector's replies for this response could
            not be read (a yes/no reply that is neither). Counted even where a
            documented option of the method gives such replies a value.
        spec: JSON of the component spec that produced the score.
    """

    response_id: str
    detector: str
    value: float | None
    error: str = ""
    retryable: bool = False
    failed: bool = False
    unreadable: int = 0
    spec: str = "{}"

    table: ClassVar[str] = "scores"
    key: ClassVar[tuple[str, ...]] = ("response_id", "detector")

    def __post_init__(self) -> None:
        _check_id(self.response_id, "response_id")
        _check_id(self.detector, "detector")
        _check_optional_float(self.value, "value")
        _check_failure(self, self.detector)


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricResult:
    """One metric of one detector against one reference labeler (the metrics table).

    A labeler measured against another is an :class:`AgreementResult`.

    Attributes:
        detector: Key of the detector being measured.
        labeler: Key of the labeler used as ground truth.
        metric: Metric name (``auroc``, ``pr_auc``, ``f1_macro``…).
        value: The metric on all usable items; NaN when undefined.
        ci_low: Lower end of the bootstrap confidence interval.
        ci_high: Upper end of the bootstrap confidence interval.
        n: Items used.
        n_positive: Hallucinated items among them.
        n_excluded: Items dropped because a label or score was missing.
        slice: Which subset (``all``, ``task=qa``, ``model=gpt-4-0613``…).
        dataset: The dataset the items come from.
        threshold: Decision threshold for thresholded metrics, if any.
        note: How the threshold was chosen, or why the value is NaN.
    """

    detector: str
    labeler: str
    metric: str
    value: float
    ci_low: float
    ci_high: float
    n: int
    n_positive: int
    n_excluded: int
    slice: str = "all"
    dataset: str = ""
    threshold: float | None = None
    note: str = ""

    table: ClassVar[str] = "metrics"
    key: ClassVar[tuple[str, ...]] = ("dataset", "slice", "detector", "labeler", "metric")


@dataclass(frozen=True, slots=True, kw_only=True)
class AgreementResult:
    """One metric of one labeler against the labeler taken as ground truth (the agreement table).

    The fields of :class:`MetricResult`, but for a labeler's verdicts (or its
    continuous score) in place of a detector's score; both sides are
    labelers, so the one measured is ``labeler`` and its ground truth
    ``reference``.

    Attributes:
        labeler: Key of the labeler being measured.
        reference: Key of the labeler used as ground truth (``human``…).
        metric: Metric name (``accuracy``, ``cohen_kappa``, ``auroc``…).
        value: The metric on all usable items; NaN when undefined.
        ci_low: Lower end of the bootstrap confidence interval.
        ci_high: Upper end of the bootstrap confidence interval.
        n: Items used.
        n_positive: Hallucinated items among them (by the reference).
        n_excluded: Items dropped because a verdict or score was missing.
        slice: Which subset (``all``, ``task=qa``, ``model=gpt-4-0613``…).
        dataset: The dataset the items come from.
        threshold: Decision threshold, if any.
        note: What was measured (the verdict or the score), or why the value is NaN.
    """

    labeler: str
    reference: str
    metric: str
    value: float
    ci_low: float
    ci_high: float
    n: int
    n_positive: int
    n_excluded: int
    slice: str = "all"
    dataset: str = ""
    threshold: float | None = None
    note: str = ""

    table: ClassVar[str] = "agreement"
    key: ClassVar[tuple[str, ...]] = ("dataset", "slice", "labeler", "reference", "metric")


Record = Example | Response | Label | Score | MetricResult | AgreementResult
R = TypeVar("R", Example, Response, Label, Score, MetricResult, AgreementResult)

_JSON_FIELDS = {"meta", "features"}
# ``_to_json(value)``, with one encoder built once.
_to_json = json.JSONEncoder(sort_keys=True, default=str).encode
_TUPLE_FIELDS = {"references", "incorrect_references", "choices", "samples"}
# Fields added to Label and Score later: a null cell (a row of an older part
# merged with newer ones) reads as the default.
_FIELD_DEFAULTS: dict[str, Any] = {"failed": False, "unreadable": 0}


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def records_to_rows(records: Iterable[Record]) -> list[dict[str, Any]]:
    """Turn records into plain rows fit for a table (mappings become JSON text)."""
    rows = []
    names_of: dict[type[Any], list[str]] = {}
    for record in records:
        kind = type(record)
        if kind not in names_of:
            names_of[kind] = [f.name for f in dataclasses.fields(record)]
        row = {}
        for name in names_of[kind]:
            value = getattr(record, name)
            if name in _JSON_FIELDS:
                empty = isinstance(value, dict) and not value
                value = "{}" if empty else _to_json(value)
            elif name in _TUPLE_FIELDS:
                value = list(value)
            row[name] = value
        rows.append(row)
    return rows


def _from_cell(name: str, value: Any) -> Any:
    if name in _FIELD_DEFAULTS and (value is None or _is_nan(value)):
        return _FIELD_DEFAULTS[name]  # a cell of a part written before the field existed
    if name == "unreadable" and isinstance(value, float) and value.is_integer():
        return int(value)  # pandas holds an int column with nulls as floats
    if name in _JSON_FIELDS:
        return json.loads(value) if isinstance(value, str) and value and value != "{}" else {}
    if name in _TUPLE_FIELDS:
        return tuple(value) if value is not None else ()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def records_from_rows(cls: type[R], rows: Sequence[Mapping[str, Any]]) -> list[R]:
    """Rebuild records of type ``cls`` from rows made by :func:`records_to_rows`."""
    names = [f.name for f in dataclasses.fields(cls)]
    return [cls(**{n: _from_cell(n, row[n]) for n in names if n in row}) for row in rows]


def records_from_columns(cls: type[R], columns: Mapping[str, Sequence[Any]]) -> list[R]:
    """Rebuild records of type ``cls`` from equal-length columns of cells.

    The same records as :func:`records_from_rows` on the rows those columns
    hold, built column by column (no row dicts in between).
    """
    names = [f.name for f in dataclasses.fields(cls) if f.name in columns]
    cells = [_from_column(n, columns[n]) for n in names]
    return [cls(**dict(zip(names, row, strict=True))) for row in zip(*cells, strict=True)]


def _from_column(name: str, values: Sequence[Any]) -> Sequence[Any]:
    """:func:`_from_cell` of every value, skipping columns it would leave as they are."""
    if name in _JSON_FIELDS or name in _TUPLE_FIELDS or name in _FIELD_DEFAULTS:
        return [_from_cell(name, v) for v in values]
    if any(isinstance(v, float) and math.isnan(v) for v in values):
        return [_from_cell(name, v) for v in values]
    return values


def records_to_columns(records: Sequence[Record]) -> dict[str, list[Any]]:
    """The columns of :func:`records_to_rows` (records of one type), built column by column."""
    columns = {}
    for f in dataclasses.fields(records[0]):
        values = [getattr(r, f.name) for r in records]
        if f.name in _JSON_FIELDS:
            values = ["{}" if isinstance(v, dict) and not v else _to_json(v) for v in values]
        elif f.name in _TUPLE_FIELDS:
            values = [list(v) for v in values]
        columns[f.name] = values
    return columns
