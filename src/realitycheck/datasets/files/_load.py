"""Reading the ``files`` dataset: its files found, side files joined, each row made records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from realitycheck.datasets import Bundle, read_rows
from realitycheck.datasets.files._join import (
    Origins,
    SideFile,
    add_path_fields,
    join_key,
    relocated,
    values_column,
)
from realitycheck.datasets.files._judges import judges_note
from realitycheck.datasets.files._label_rules import rules_note
from realitycheck.datasets.files._mapping import column_mapping, constant_fields
from realitycheck.datasets.files._paths import PathMatch, PathPattern, fill, unique_labels
from realitycheck.datasets.files._rows import RowReader
from realitycheck.errors import DataNotFoundError, InvalidInputError
from realitycheck.params import as_tuple

if TYPE_CHECKING:
    from realitycheck.datasets.files import Files

__all__ = ["Source", "load_files", "plan"]


@dataclass(frozen=True)
class Source:
    """One file to read, with what its path says and the side files joined to it.

    Attributes:
        match: The file, its path fields and its path below the pattern's folder.
        label: A short name that tells it from the other files (the model of
            rows that name none, when there are several files).
        sides: The side files joined to it, in the order of ``join``, each with
            the column of its plain values.
    """

    match: PathMatch
    label: str
    sides: tuple[tuple[Path, str], ...] = ()


def _expand(owner: Files, given: str, what: str) -> list[PathMatch]:
    """Return the files one path or pattern names, resolved under ``data_dir``.

    Raises:
        DataNotFoundError: A plain path that is not a file, or a pattern that matches none.
    """
    pattern = PathPattern(given, base=None if owner.data_dir is None else Path(owner.data_dir))
    try:
        found = pattern.matches()
    except DataNotFoundError as exc:
        raise DataNotFoundError(f"{exc} ({what} of dataset {owner.run_name!r})") from None
    if not pattern.is_pattern and not found[0].path.is_file():
        raise DataNotFoundError(
            f"The file {str(found[0].path)!r} ({what} of dataset {owner.run_name!r}) "
            "does not exist."
        )
    return found


def plan(owner: Files) -> list[Source]:
    """Return the files ``owner`` reads, in order, each with its side files.

    Raises:
        DataNotFoundError: A file or side file is missing, or a pattern matches none.
        InvalidInputError: Two entries of ``path`` name one file; a side file
            pattern names several files for one main file; or one side file
            would pair by position with several main files.
    """
    matches: list[PathMatch] = []
    seen: dict[Path, str] = {}
    for given in as_tuple(owner.path):
        for match in _expand(owner, str(given), "path"):
            key = match.path.resolve()
            if key in seen:
                raise InvalidInputError(
                    f"The file {str(match.path)!r} is named twice in 'path' (by {seen[key]!r} "
                    f"and {str(given)!r}); its rows would be read twice.",
                    field="path",
                )
            seen[key] = str(given)
            matches.append(match)
    out = []
    for match, label in zip(matches, unique_labels(matches), strict=True):
        sides = []
        for template in owner.join:
            found = _expand(owner, fill(template, match.fields), "join")
            if len(found) > 1:
                raise InvalidInputError(
                    f"The side file {template!r} names {len(found)} files for "
                    f"{match.relative or match.path.name} ({found[0].path.name}, "
                    f"{found[1].path.name}, ...); it must name one per file of 'path': use "
                    "the path's {fields} in it rather than a glob.",
                    field="join",
                )
            sides.append((found[0].path, values_column(template)))
        out.append(Source(match, label, tuple(sides)))
    if join_key(owner.join_on).by_position and len(out) > 1:
        shared = {s for source in out for s in source.sides}
        if len(shared) < len(out) * len(owner.join):
            raise InvalidInputError(
                f"join_on=position pairs row k of a side file with row k of one file, but "
                f"{len(out)} files match 'path' and share a side file; name one side file per "
                "file with the path's {fields} (join=scores/{model}.json), or join on an id.",
                field="join_on",
            )
    return out


def load_files(owner: Files, progress: Callable[[int], Any] | None = None) -> Bundle:
    """Read ``owner``'s files into examples, responses, labels and recorded scores."""
    sources = plan(owner)
    key = join_key(owner.join_on)
    sides: dict[Path, SideFile] = {}
    out = Bundle(examples=[])
    reader: RowReader | None = None
    several = len(sources) > 1
    for source in sources:
        path, shown = source.match.path, source.match.relative or source.match.path.name
        available, rows = read_rows(
            path,
            format=owner.format,
            records=owner.records,
            delimiter=owner.delimiter,
            key_column=owner.key_column,
        )
        if not rows:
            raise InvalidInputError(
                f"The file has a header ({', '.join(available) or 'no columns'}) but no "
                "rows; nothing was loaded.",
                path=path,
            )
        added, origins = add_path_fields(rows, source.match.fields, path, shown)
        available += [c for c in added if c not in available]
        for side_path, values in source.sides:
            if side_path not in sides:
                sides[side_path] = SideFile(side_path, key, owner.key_column, values)
            added = sides[side_path].join(rows, path, origins)
            available += [c for c in added if c not in available]
        mapping = column_mapping(owner, available, path)
        if reader is None:
            reader = RowReader(owner, mapping, path)
        reader.next_file(path, mapping, source.label if several else "", shown)
        _read(reader, rows, origins, out)
        out.notes.append(_read_note(source, shown, len(rows), mapping, key))
    assert reader is not None  # plan returns at least one file
    if progress is not None:
        progress(len(out.responses))
    if several and "model" not in constant_fields(owner):
        labels = ", ".join(s.label for s in sources[:3]) + (", …" if len(sources) > 3 else "")
        out.notes.append(
            f"Read {len(sources)} files; a row without a model column takes its file's "
            f"path below the pattern's folder, without the extension, as the model ({labels})."
        )
    out.notes.extend(w for side in sides.values() if (w := side.unused_warning()))
    _finish(owner, reader, [s.match.relative or s.match.path.name for s in sources], out)
    return out


def _read(
    reader: RowReader, rows: list[tuple[int, dict[str, Any]]], origins: Origins, out: Bundle
) -> None:
    """Read each row; an error in a value from the path or a side file names where it came from."""
    for (line, row), origin in zip(rows, origins, strict=True):
        try:
            reader.read(line, row, out)
        except InvalidInputError as exc:
            where = origin.get(exc.field or "")
            if where is None or exc.path != str(reader.path):
                raise
            raise relocated(exc, where) from None


def _read_note(source: Source, shown: str, n: int, mapping: dict[str, str], key: Any) -> str:
    used = ", ".join(f"{k} <- {v}" for k, v in mapping.items())
    note = f"Read {n} rows of {shown}; columns used: {used}."
    if source.match.fields:
        fields = ", ".join(f"{k}={v!r}" for k, v in source.match.fields.items())
        note += f" From its path: {fields}."
    for side, _ in source.sides:
        note += f" Joined {side.name} on {key}."
    return note


def _finish(owner: Files, reader: RowReader, shown: list[str], out: Bundle) -> None:
    """Add the labels that need every row, and the notes on how the cells were read."""
    fitted = reader.finish(out)
    names = ", ".join(shown[:3]) + (", …" if len(shown) > 3 else "")
    out.notes.extend(reader.warnings(names))
    if reader.verdicts:
        out.notes.append(rules_note(owner))
        out.notes.extend([*reader.rules.notes(reader.verdicts, names), *fitted])
    elif owner.answers:
        out.notes.append(f"Labels fixed per answer column: {', '.join(owner.answers)}.")
    else:
        out.notes.append("No label column: the responses carry no human labels.")
    if owner.judges:
        out.notes.append(judges_note(owner))
        out.notes.extend(reader.judge_notes(names))
    out.notes.append(
        f"Scores {list(owner.scores)} are stored as recorded:<column>; "
        f"{list(owner.flip)} flipped to 1 - value (higher = more likely hallucinated)."
    )
    if owner.answers:
        out.notes.append(f"Each row yields {len(owner.answers)} responses, one per answer column.")
    if owner.constants:
        out.notes.append(f"Set for every row: {', '.join(owner.constants)}.")
