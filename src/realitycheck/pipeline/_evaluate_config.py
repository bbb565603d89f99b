"""What the evaluate stage measures and how: :class:`EvaluationConfig`.

Read by the stage (:mod:`realitycheck.pipeline._evaluate`) and by the work
of each unit it measures (:mod:`realitycheck.pipeline._evaluate_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields

from realitycheck.analysis import (
    CALIBRATION_METHODS,
    OBJECTIVES,
    Bootstrap,
)
from realitycheck.params import (
    InstanceOf,
    Interval,
    NonEmptyStr,
    OneOf,
    OrNone,
    Satisfies,
    SequenceOf,
    as_tuple,
    check_params,
    param,
)

__all__ = ["EvaluationConfig"]

_KEYS = OrNone(SequenceOf(NonEmptyStr()))


def _is_threshold_map(value: object) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool) and v == v
        for k, v in value.items()
    )


@dataclass(frozen=True, kw_only=True)
class EvaluationConfig:
    """What to measure and how.

    Args:
        reference: The labeler taken as ground truth, any stored label key
            (``human``, ``human[protocol=worst]``, a judge, a panel,
            ``recorded:<name>``). ``None`` (the default) = the dataset's human
            labels: agreement against every human aggregate. When set, every
            other labeler (human aggregates included, single annotators not) is
            measured against it, and it is the first reference of the detectors.
        detectors: The detectors the caller named (those its detect stage ran),
            stored detector keys or a family of stored records (``recorded``);
            each must have scores in the run. ``None`` = none named. Every
            stored detector is measured either way, unless ``only`` is set.
        labelers: The automatic labelers the caller named (those its label
            stage ran); each must have labels in the run. ``None`` = none
            named. Every stored labeler is compared with humans (with the
            reference, when one is set, and then the human aggregates too)
            either way, unless ``only`` is set.
        only: Measure the named components alone: the metrics table holds only
            the ``detectors`` named and the agreement table only the
            ``labelers`` named (against a non-human reference, with the human
            aggregates); a family left unnamed (``None``) is measured whole.
            ``False`` (the default): every stored detector and labeler is
            measured, so the tables describe the whole run.
        references: Labelers used as ground truth for detectors; ``None`` = the
            human aggregates (not single annotators) and every automatic labeler.
        bootstrap: Resamples, confidence and seed of every interval.
        threshold_objective: What the calibration-split threshold maximises.
        calibration: How a detector's score becomes a probability of
            hallucination before ECE and the Brier score: ``platt`` (Platt
            scaling) or ``isotonic`` (isotonic regression), fitted with
            scikit-learn on the calibration split of each dataset and
            reference, the metrics measured on the test split; ``none`` takes
            scores as probabilities (detectors with a value outside [0, 1]
            then get neither metric). PRR needs no calibration: it is rank-based.
        calibration_fraction: Share of examples in the calibration split.
        thresholds: Fixed thresholds by detector key (hallucinated iff value >=
            threshold); these detectors skip the calibration-split choice.
        slice_by: Columns that add one slice per value, ``<column>=<value>``,
            when a dataset has two or more: ``prompt_variant``, or a column a
            ``files`` dataset declared as ``meta`` (``model``, ``task`` and
            ``dataset`` are accepted; the first two are sliced anyway).
    """

    reference: str | None = param(None, OrNone(NonEmptyStr()))
    detectors: tuple[str, ...] | None = param(None, _KEYS, convert=as_tuple)
    labelers: tuple[str, ...] | None = param(None, _KEYS, convert=as_tuple)
    only: bool = param(False, InstanceOf(bool))
    references: tuple[str, ...] | None = param(None, _KEYS, convert=as_tuple)
    bootstrap: Bootstrap = param(MISSING, InstanceOf(Bootstrap), default_factory=Bootstrap)
    threshold_objective: str = param("f1_macro", OneOf(*OBJECTIVES))
    calibration: str = param("platt", OneOf(*CALIBRATION_METHODS))
    calibration_fraction: float = param(0.5, Interval(float, 0, 1, closed="neither"))
    thresholds: Mapping[str, float] = param(
        MISSING,
        Satisfies(_is_threshold_map, "a mapping from detector keys to numbers"),
        default_factory=dict,
    )
    slice_by: tuple[str, ...] = param((), SequenceOf(NonEmptyStr()), convert=as_tuple)

    def __post_init__(self) -> None:
        check_params(self, owner="evaluate")

    @property
    def measured_detectors(self) -> tuple[str, ...] | None:
        """The detectors the metrics table holds: the named ones with ``only``, else all (None)."""
        return self.detectors if self.only else None

    @property
    def measured_labelers(self) -> tuple[str, ...] | None:
        """The labelers the agreement table holds: the named ones with ``only``, else all (None)."""
        return self.labelers if self.only else None

    def as_dict(self) -> dict[str, object]:
        """The settings as plain JSON-able values (written to the run manifest)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["bootstrap"] = self.bootstrap.as_dict()
        out["thresholds"] = dict(self.thresholds)
        return out
