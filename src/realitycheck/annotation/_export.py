"""``annotate export``: write chosen responses of a run as files people can label.

The output folder receives, for the formats asked:

- ``label-studio``: ``tasks.json`` (import it into a project) and
  ``label_config.xml`` (the project's labeling configuration);
- ``csv``: ``items.csv``; ``jsonl``: ``items.jsonl`` (one row per item and
  annotator slot, see :mod:`._plain`);
- always ``annotation.json``: the round's manifest (its id, the strategy,
  seed, n, labelers, annotators per item, whether verdicts were shown, and
  every chosen item) with no time in it, so the same export gives the same
  bytes.

The round is also recorded in the run's manifest (``config.annotation.rounds``),
so that ``annotate import`` can check that the items of a file were exported
from this run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from realitycheck.annotation._items import items_of, round_id, safe_json
from realitycheck.annotation._label_studio import label_studio_tasks, labeling_config
from realitycheck.annotation._names import FORMATS
from realitycheck.annotation._plain import plain_rows, write_csv, write_jsonl
from realitycheck.annotation._select import Choice, Selection, choose
from realitycheck.params import InstanceOf, Interval, OneOf, SequenceOf, as_unique_tuple, check_arg
from realitycheck.records.keys import LabelKey
from realitycheck.store import RunData, RunStore

__all__ = ["MANIFEST", "ExportReport", "export_items", "recorded_rounds"]

MANIFEST = "annotation.json"
"""The round's manifest in the output folder."""
_OWNER = "annotate export"


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote.

    Attributes:
        round_id: The round's id (a hash of the selection; no time in it).
        folder: The output folder.
        files: The files written, manifest last.
        choice: The chosen responses and their groups.
        annotators: Annotations wanted per item.
    """

    round_id: str
    folder: Path
    files: tuple[Path, ...]
    choice: Choice
    annotators: int


def recorded_rounds(store: RunStore) -> dict[str, dict[str, Any]]:
    """The export rounds recorded in a run's manifest, by round id."""
    annotation = store.read_manifest().get("config", {}).get("annotation") or {}
    rounds = annotation.get("rounds") or {}
    return {str(k): dict(v) for k, v in rounds.items() if isinstance(v, dict)}


def _record_round(store: RunStore, rid: str, entry: dict[str, Any]) -> None:
    annotation = dict(store.read_manifest().get("config", {}).get("annotation") or {})
    rounds = dict(annotation.get("rounds") or {})
    rounds[rid] = entry
    store.update_manifest(config={"annotation": {**annotation, "rounds": rounds}})


def export_items(
    store: RunStore,
    out: str | Path,
    selection: Selection,
    *,
    formats: Sequence[str] = FORMATS,
    annotators: int = 1,
    show_verdicts: bool = False,
    instructions: str = "",
) -> ExportReport:
    """Choose responses of a run and write them for annotators.

    Args:
        store: The run.
        out: The output folder (created if missing; files of the same names replaced).
        selection: Which responses (:class:`Selection`).
        formats: Some of :data:`FORMATS`.
        annotators: Annotations wanted per item (>= 1): rows per item in the
            plain files, ``maximum_annotations`` for a Label Studio project.
        show_verdicts: Show the automatic verdicts (those of ``selection.labelers``,
            else of every non-human labeler); annotators are blinded by default.
        instructions: A line of guidance in the Label Studio configuration.

    Raises:
        InvalidInputError: A bad argument, a labeler the run lacks, or no
            response that qualifies; nothing is written then.
    """
    formats = check_arg(
        formats,
        SequenceOf(OneOf(FORMATS), min_length=1),
        name="formats",
        owner=_OWNER,
        convert=as_unique_tuple,
    )
    check_arg(annotators, Interval(int, 1), name="annotators", owner=_OWNER)
    check_arg(show_verdicts, InstanceOf(bool), name="show_verdicts", owner=_OWNER)
    data = RunData(store)
    choice = choose(data, selection)
    shown = None
    if show_verdicts:
        shown = list(selection.labelers) or [
            k for k in sorted(data.wide_verdicts.columns) if not LabelKey.parse(k).is_human
        ]
    items = items_of(data, choice.response_ids, show=shown)
    record: dict[str, Any] = {
        **selection.record(),
        "annotators": annotators,
        "show_verdicts": show_verdicts,
        "response_ids": list(choice.response_ids),
    }
    rid = round_id(record)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    if "label-studio" in formats:
        files.append(folder / "tasks.json")
        files[-1].write_text(
            label_studio_tasks(items, rid, show_verdicts=show_verdicts), encoding="utf-8"
        )
        files.append(folder / "label_config.xml")
        config = labeling_config(show_verdicts=show_verdicts, instructions=instructions)
        files[-1].write_text(config, encoding="utf-8")
    rows = list(plain_rows(items, rid, annotators=annotators, show_verdicts=show_verdicts))
    for name, writer in (("csv", write_csv), ("jsonl", write_jsonl)):
        if name in formats:
            files.append(folder / f"items.{name}")
            writer(files[-1], rows)
    manifest = {
        "round": rid,
        **{k: v for k, v in record.items() if k != "response_ids"},
        "candidates": choice.candidates,
        "groups": choice.counts(),
        "label_studio": {"maximum_annotations": annotators},
        "files": [f.name for f in files],
        "items": [
            {"item_id": i.item_id, "response_id": rid, "group": choice.groups[rid]}
            for i, rid in ((i, i.response_id) for i in items)
        ],
    }
    files.append(folder / MANIFEST)
    files[-1].write_text(safe_json(manifest, indent=2) + "\n", encoding="utf-8")
    _record_round(store, rid, {**record, "candidates": choice.candidates, "out": str(folder)})
    return ExportReport(rid, folder, tuple(files), choice, annotators)
