"""What a dataset yields, as records: :class:`Bundle`.

Its columnar twin, :class:`~realitycheck.datasets._table_bundle.TableBundle`,
is built from it (and imports pyarrow; this module does not).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from realitycheck.records import Example, Label, Response, Score

__all__ = ["Bundle"]


@dataclass(frozen=True, kw_only=True)
class Bundle:
    """Everything a dataset yields.

    Attributes:
        examples: The inputs.
        responses: Model outputs the dataset ships (empty for input-only data).
        labels: Human labels of those outputs (``human``, ``human:<annotator>``).
        scores: Detector outputs the dataset's authors recorded (``recorded:<name>``).
        notes: Plain-language statements of how the raw data was mapped.
    """

    examples: list[Example]
    responses: list[Response] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    scores: list[Score] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
