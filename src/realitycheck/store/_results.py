"""What a study found, and how it is kept in a run folder: ``RUN/studies/<study key>/``.

A run on object storage keeps no study results itself: they go to
``DIR/studies/<study key>/`` in a local folder ``DIR`` the caller names (the
folder that also receives the run's report), in the same layout.

Each result is a folder holding ``result.json`` (study key, spec, finding,
skipped lines, table and figure captions), one CSV per table and one PNG per
figure. The folder is written beside the old one and swapped in, so a reader
never sees half a result.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from realitycheck.errors import InvalidInputError
from realitycheck.store._atomic import atomic_folder
from realitycheck.store._store import RunStore
from realitycheck.text import csv_safe_frame

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "StudyFigure",
    "StudyResult",
    "StudyTable",
    "folder_name",
    "load_results",
    "result_dir",
    "save_result",
]


@dataclass(frozen=True)
class StudyTable:
    """One table of a study: a stable file-safe ``name``, the frame and a caption."""

    name: str
    frame: pd.DataFrame
    caption: str = ""


@dataclass(frozen=True)
class StudyFigure:
    """One figure of a study: a stable file-safe ``stem``, PNG bytes and a caption."""

    stem: str
    png: bytes
    caption: str = ""


@dataclass(frozen=True, kw_only=True)
class StudyResult:
    """What a study found.

    Attributes:
        study: Key of the study that produced it.
        spec: The study's spec (name, params, version).
        finding: A few plain-language sentences stating what the numbers show.
        tables: The tables, in reading order.
        figures: The figures, in reading order.
        skipped: One line per dataset (or part) the study could not run on, and why.
        bootstrap: The bootstrap settings its intervals used (empty if none).
    """

    study: str
    spec: dict[str, object]
    finding: str
    tables: tuple[StudyTable, ...] = ()
    figures: tuple[StudyFigure, ...] = ()
    skipped: tuple[str, ...] = ()
    bootstrap: dict[str, object] = field(default_factory=dict)

    def table(self, name: str) -> pd.DataFrame:
        """Return the table called ``name``."""
        for t in self.tables:
            if t.name == name:
                return t.frame
        raise KeyError(
            f"{self.study} has no table {name!r}; it has {[t.name for t in self.tables]}"
        )


_SAFE = re.compile(r"[^A-Za-z0-9._=-]+")


MAX_NAME = 80
"""Most characters of a key kept in a folder or file name (then ``-`` and an 8-hex hash)."""


def folder_name(study_key: str) -> str:
    """Return a file-safe folder name for a study key, distinct for distinct keys.

    A key that is already safe is used as is; otherwise the unsafe characters
    become ``_`` and a short hash of the key is appended, so
    ``metric-correlation[signals=recorded:*]`` and ``…[signals=recorded:?]``
    never share a folder. A name is at most :data:`MAX_NAME` + 9 characters
    (a longer key keeps its first :data:`MAX_NAME` and the hash), so that the
    report's figure files, whose names join a study's folder name and a
    figure's, stay under the usual 255-byte limit.
    """
    safe = _SAFE.sub("_", study_key).strip("._") or "study"
    if safe == study_key and len(safe) <= MAX_NAME:
        return safe
    return f"{safe[:MAX_NAME]}-{hashlib.sha1(study_key.encode('utf-8')).hexdigest()[:8]}"


def result_dir(store: RunStore, study_key: str, *, folder: str | Path | None = None) -> Path:
    """Return the folder of one study's result: in ``folder``, else in the run folder.

    Args:
        store: The run.
        study_key: The study's key.
        folder: The local folder whose ``studies/`` holds the run's results;
            ``None`` = the run folder (a run on object storage has none, and
            raises :class:`~realitycheck.errors.RunFolderError`).
    """
    root = store.path if folder is None else Path(folder)
    return root / "studies" / folder_name(study_key)


def save_result(store: RunStore, result: StudyResult, *, folder: str | Path | None = None) -> Path:
    """Write a study result into the run (replacing an older result of the same study).

    Table and figure names become file names as :func:`folder_name` makes them
    safe (a figure named after a dataset such as ``files:/data/x.jsonl`` gets
    ``files_data_x.jsonl-<hash>``); the stored result lists the names used.
    ``folder``: as in :func:`result_dir` (required for a run on object storage).
    """
    final = result_dir(store, result.study, folder=folder)
    final.parent.mkdir(parents=True, exist_ok=True)
    tables = [(folder_name(t.name), t) for t in result.tables]
    figures = [(folder_name(f.stem), f) for f in result.figures]
    with atomic_folder(final) as tmp:
        for name, t in tables:
            csv_safe_frame(t.frame).to_csv(tmp / f"{name}.csv", index=False)
        for stem, f in figures:
            (tmp / f"{stem}.png").write_bytes(f.png)
        meta = {
            "study": result.study,
            "spec": result.spec,
            "finding": result.finding,
            "skipped": list(result.skipped),
            "bootstrap": result.bootstrap,
            "tables": [{"name": name, "caption": t.caption} for name, t in tables],
            "figures": [{"stem": stem, "caption": f.caption} for stem, f in figures],
        }
        (tmp / "result.json").write_text(json.dumps(meta, indent=2, default=str), encoding="utf-8")
    return final


def load_results(store: RunStore, *, folder: str | Path | None = None) -> list[StudyResult]:
    """Return every study result stored for a run, sorted by study key.

    Args:
        store: The run.
        folder: The local folder whose ``studies/`` holds the results (for a
            run on object storage, the one its studies were given); ``None`` =
            the run folder, and for a run on object storage no result: ``[]``.
    """
    if folder is None and store.remote is not None:
        return []
    root = (store.path if folder is None else Path(folder)) / "studies"
    if not root.is_dir():
        return []
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        meta_path = folder / "result.json"
        if not meta_path.exists():
            continue
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f"not valid JSON: {exc.msg}", path=meta_path, line=exc.lineno
            ) from None
        tables = tuple(
            StudyTable(
                name=t["name"],
                frame=_read_csv(folder / f"{t['name']}.csv"),
                caption=t.get("caption", ""),
            )
            for t in meta.get("tables", [])
        )
        figures = tuple(
            StudyFigure(
                stem=f["stem"],
                png=(folder / f"{f['stem']}.png").read_bytes(),
                caption=f.get("caption", ""),
            )
            for f in meta.get("figures", [])
        )
        out.append(
            StudyResult(
                study=meta["study"],
                spec=meta.get("spec", {}),
                finding=meta.get("finding", ""),
                tables=tables,
                figures=figures,
                skipped=tuple(meta.get("skipped", [])),
                bootstrap=meta.get("bootstrap", {}),
            )
        )
    return out


def _read_csv(path: Path) -> pd.DataFrame:
    import pandas as pd

    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return pd.DataFrame()
    return pd.read_csv(io.StringIO(text))
