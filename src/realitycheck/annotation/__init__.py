"""Humans in the loop: responses of a run out to annotators, their verdicts back in.

:func:`export_items` chooses responses of a run (:class:`Selection`: where
named labelers disagree, stratified, random, or where a first round's
annotators disagree) and writes them as Label Studio tasks with their labeling
configuration, or as CSV / JSONL sheets, blinded to the automatic verdicts by
default. :func:`import_annotations` reads Label Studio's JSON export or the
filled sheets back: each annotator becomes the labels ``human:<annotator>``,
their aggregate ``human`` (by the ``files`` dataset's rules, after dropping
the least reliable annotators by Dawid–Skene if asked), and their agreement
is stored as the study result ``annotation`` that the report shows.

It sits at the pipeline's layer: it reads and writes the run store and uses
the rater statistics of :mod:`realitycheck.analysis`. The name lists load at
once, everything else on first use, so the command line starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from realitycheck.annotation._names import (
    AGGREGATES,
    FORMATS,
    STRATA,
    STRATEGIES,
    VERDICT_CHOICES,
)
from realitycheck.registry import lazy_names

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from realitycheck.annotation._agreement import MIN_OVERLAP, Agreement
    from realitycheck.annotation._export import MANIFEST, ExportReport, export_items
    from realitycheck.annotation._import import AGGREGATE_SPEC, SOURCE_SPEC, import_annotations
    from realitycheck.annotation._items import Item, item_id
    from realitycheck.annotation._label_studio import (
        Annotation,
        label_studio_tasks,
        labeling_config,
        read_label_studio,
    )
    from realitycheck.annotation._plain import PLAIN_COLUMNS, read_plain
    from realitycheck.annotation._result import RESULT_KEY, ImportReport
    from realitycheck.annotation._select import Choice, Selection, choose
    from realitycheck.annotation._sources import FileRead

_WHERE: dict[str, str] = {
    **dict.fromkeys(("MIN_OVERLAP", "Agreement"), "_agreement"),
    **dict.fromkeys(("MANIFEST", "ExportReport", "export_items"), "_export"),
    **dict.fromkeys(
        ("AGGREGATE_SPEC", "SOURCE_SPEC", "import_annotations"),
        "_import",
    ),
    **dict.fromkeys(("Item", "item_id"), "_items"),
    **dict.fromkeys(
        ("Annotation", "label_studio_tasks", "labeling_config", "read_label_studio"),
        "_label_studio",
    ),
    **dict.fromkeys(("PLAIN_COLUMNS", "read_plain"), "_plain"),
    **dict.fromkeys(("RESULT_KEY", "ImportReport"), "_result"),
    "FileRead": "_sources",
    **dict.fromkeys(("Choice", "Selection", "choose"), "_select"),
}

__all__ = [
    "AGGREGATES",
    "AGGREGATE_SPEC",
    "Agreement",
    "Annotation",
    "Choice",
    "ExportReport",
    "FORMATS",
    "FileRead",
    "ImportReport",
    "Item",
    "MANIFEST",
    "MIN_OVERLAP",
    "PLAIN_COLUMNS",
    "RESULT_KEY",
    "SOURCE_SPEC",
    "STRATA",
    "STRATEGIES",
    "Selection",
    "VERDICT_CHOICES",
    "choose",
    "export_items",
    "import_annotations",
    "item_id",
    "label_studio_tasks",
    "labeling_config",
    "read_label_studio",
    "read_plain",
]


# Load a public name from its module on first use (the names above stay light).
__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
