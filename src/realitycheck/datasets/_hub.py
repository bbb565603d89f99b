"""Rows of a Hugging Face dataset: from the Hub through ``datasets``, or from local files.

Local files are the Hub dataset's own files or exports of it: Parquet
(``validation-00000-of-00001.parquet``), JSON lines (``Dataset.to_json``) or a
JSON array of row objects. A folder is read file by file, keeping the files
whose name starts with the split.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from realitycheck.datasets._base import Dataset
from realitycheck.datasets._io import as_object, read_jsonl, read_text
from realitycheck.errors import DataNotFoundError, InvalidInputError, MissingDependencyError
from realitycheck.params import InstanceOf, NonEmptyStr, OrNone, PathLike, param

__all__ = ["HubDataset", "hub_rows", "local_files", "local_rows"]

SUFFIXES = (".parquet", ".jsonl", ".json")


def local_files(path: Path, split: str) -> list[Path]:
    """Return the data files at ``path``: the file itself, or a folder's files of ``split``.

    Raises:
        DataNotFoundError: When nothing readable is there.
    """
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DataNotFoundError(f"No file or folder at {path}.", path=path)
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    of_split = [p for p in files if p.name.startswith(split)]
    if not of_split:
        names = ", ".join(p.name for p in files[:10]) or "none"
        raise DataNotFoundError(
            f"The folder holds no {'/'.join(SUFFIXES)} file whose name starts with the split "
            f"{split!r} (found: {names}). Pass the file itself as path, or choose the split.",
            path=path,
        )
    return of_split


def local_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(row or line number, row)`` of one local file (1-based).

    A ``.json`` file holding one JSON value yields its objects (an array) or the
    object itself (numbered 1); any other file is read as JSON lines.

    Raises:
        InvalidInputError: On a file that is not Parquet, JSON lines or JSON objects.
    """
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise InvalidInputError(f"The file is not readable Parquet: {exc}", path=path) from None
        yield from enumerate(table.to_pylist(), start=1)
        return
    if path.suffix == ".json":
        text = read_text(path)
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None  # not one JSON value: JSON lines, as Dataset.to_json writes them
        if isinstance(whole, dict):
            yield 1, whole
            return
        if isinstance(whole, list):
            for i, row in enumerate(whole, start=1):
                yield i, as_object(row, "row", path=path, line=i)
            return
    yield from read_jsonl(path)


def hub_rows(
    hub_id: str, config: str | None, split: str, *, revision: str | None, dataset: str
) -> Iterator[dict[str, Any]]:
    """Yield the rows of a Hub dataset split through the ``datasets`` library.

    Raises:
        MissingDependencyError: When ``datasets`` is not installed.
        DataNotFoundError: When the Hub cannot be reached or has no such dataset.
    """
    try:
        from datasets import load_dataset
    except ImportError:
        raise MissingDependencyError(
            "datasets", extra="generation", purpose=f"Loading {dataset} from the Hugging Face Hub"
        ) from None
    try:
        rows = load_dataset(hub_id, config, split=split, revision=revision)
    except (OSError, ConnectionError) as exc:
        raise DataNotFoundError(
            f"Could not load {hub_id!r} ({config}, split {split!r}) from the Hugging Face Hub: "
            f"{exc}. Without network access, download its files elsewhere and pass "
            f"path=FILE_OR_FOLDER to the {dataset} dataset."
        ) from None
    yield from rows


@dataclass(frozen=True, kw_only=True)
class HubDataset(Dataset):
    """A dataset read from the Hugging Face Hub or from local files of it (not registered).

    Subclasses set the defaults of ``config`` and ``hub_id`` and read
    :meth:`_rows` in their ``load``.

    Args:
        path: A local file or folder of the dataset; ``None`` loads from the Hub.
        split: Which split (a folder's files are those whose name starts with it).
        config: The Hub configuration.
        hub_id: The Hub dataset.
        revision: A Hub revision (commit or tag) to pin; ``None`` = the latest.
    """

    path: Path | str | None = param(None, OrNone(PathLike()), in_key=False)
    split: str = param("validation", NonEmptyStr())
    config: str = param("", InstanceOf(str))
    hub_id: str = param("", InstanceOf(str))
    revision: str | None = param(None, OrNone(NonEmptyStr()))

    def _local_rows(
        self, path: Path, row_number: int, row: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        """Yield the rows that one row of a local file holds: the row itself by default."""
        yield row

    def _rows(self) -> Iterator[tuple[Path, int, dict[str, Any]]]:
        """Yield ``(file or hf:// address, row or line number, row)`` of the chosen split."""
        if self.path is not None:
            for file in local_files(Path(self.path), self.split):
                for row_number, row in local_rows(file):
                    for flat in self._local_rows(file, row_number, row):
                        yield file, row_number, flat
            return
        where = Path(f"hf://{self.hub_id}/{self.config}/{self.split}")
        rows = hub_rows(
            self.hub_id, self.config, self.split, revision=self.revision, dataset=self.name
        )
        for row_number, row in enumerate(rows, start=1):
            yield where, row_number, row
