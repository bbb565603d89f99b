"""The run store: a run is a folder of Parquet tables, ``manifest.json`` and study results."""

from realitycheck.store._fingerprint import changed_files, digest, fingerprint
from realitycheck.store._frames import RunData
from realitycheck.store._manifest import SCHEMA_VERSION, package_versions, scrub_secrets
from realitycheck.store._results import (
    StudyFigure,
    StudyResult,
    StudyTable,
    folder_name,
    load_results,
    result_dir,
    save_result,
)
from realitycheck.store._store import RunStore

__all__ = [
    "SCHEMA_VERSION",
    "RunData",
    "RunStore",
    "StudyFigure",
    "StudyResult",
    "StudyTable",
    "changed_files",
    "digest",
    "fingerprint",
    "folder_name",
    "load_results",
    "package_versions",
    "result_dir",
    "save_result",
    "scrub_secrets",
]
