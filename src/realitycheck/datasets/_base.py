"""The dataset protocol, its registry and where dataset files are looked for."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from realitycheck.datasets._bundle import Bundle
from realitycheck.errors import DataNotFoundError
from realitycheck.params import OrNone, PathLike, param
from realitycheck.registry import Component, Registry

if TYPE_CHECKING:
    from realitycheck.datasets._table_bundle import TableBundle

__all__ = ["Bundle", "Dataset", "dataset", "datasets", "default_data_dirs", "find_data_dir"]

DATA_ENV = "REALITYCHECK_DATA_DIR"


@dataclass(frozen=True, kw_only=True)
class Dataset(Component):
    """A source of examples, responses, human labels and recorded scores.

    Subclasses set ``files`` (paths under the data root, as in the data README)
    and implement :meth:`load`.

    Args:
        data_dir: The data root holding the dataset's folder. ``None`` looks in
            ``$REALITYCHECK_DATA_DIR``, the user cache and ``../shared/data``.
    """

    data_dir: Path | str | None = param(None, OrNone(PathLike()), in_key=False)

    files: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""

    def root(self) -> Path:
        """Return the data root that holds this dataset's files."""
        return find_data_dir(self.name, self.files, self.data_dir)

    @property
    def run_name(self) -> str:
        """The name its records carry in a run (``Example.dataset``); the registered name."""
        return self.name

    def sources(self) -> list[Path]:
        """Return the files this dataset reads; their bytes make its fingerprint."""
        if not self.files:
            return []
        root = self.root()
        return [root / f for f in self.files]

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the dataset into records."""
        raise NotImplementedError

    def load_tables(self, *, progress: Callable[[int], Any] | None = None) -> TableBundle:
        """Read the dataset into tables of the store's record schemas (what a run stores).

        The tables of :meth:`load`'s records, row for row; a dataset with many
        rows overrides this to build its columns without a record per row.
        """
        from realitycheck.datasets._table_bundle import TableBundle  # pyarrow: on first use

        return TableBundle.of(self.load(progress=progress))


def cache_dir() -> Path:
    """Return the user cache folder where ``datasets fetch`` puts downloads, and datasets look.

    ``$REALITYCHECK_CACHE_DIR/data`` when that variable is set (the folder of
    the call and embedding caches too), else ``realitycheck/data`` under
    ``$XDG_CACHE_HOME`` or ``~/.cache``.
    """
    folder = os.environ.get("REALITYCHECK_CACHE_DIR")
    if folder:
        return Path(folder) / "data"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "realitycheck" / "data"


def default_data_dirs() -> list[Path]:
    """Return the folders searched for dataset files, in order."""
    dirs = []
    if os.environ.get(DATA_ENV):
        dirs.append(Path(os.environ[DATA_ENV]))
    dirs.append(cache_dir())
    dirs.append(Path.cwd().parent / "shared" / "data")
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").exists():
            dirs.append(parent.parent / "shared" / "data")
            break
    return dirs


def find_data_dir(name: str, files: tuple[str, ...], data_dir: Path | str | None) -> Path:
    """Return the first data root holding every file of a dataset.

    Raises:
        DataNotFoundError: Saying where it looked and how to fetch the files.
    """
    candidates = [Path(data_dir)] if data_dir is not None else default_data_dirs()
    for root in candidates:
        if all((root / f).exists() for f in files):
            return root
    looked = ", ".join(str(c) for c in candidates)
    missing = files[0] if files else name
    raise DataNotFoundError(
        f"The files of dataset {name!r} (e.g. {missing}) were not found in: {looked}. "
        f"Download them with `realitycheck datasets fetch {name}`, or pass --data-dir "
        f"pointing at a folder that holds them."
    )


class _DatasetRegistry(Registry[Dataset]):
    """The dataset registry; ``name=`` in a key sets a dataset's ``title`` (``files[name=phd]``)."""

    def create(self, name: str, /, **params: Any) -> Dataset:
        """Build the dataset ``name``; a ``name`` parameter is its ``title``, where it has one."""
        fields = {f.name for f in dataclasses.fields(self.get(name))}
        if "name" in params and "title" in fields and "title" not in params:
            params["title"] = params.pop("name")
        return super().create(name, **params)


datasets: Registry[Dataset] = _DatasetRegistry("datasets", "realitycheck.datasets")
dataset = datasets.register
