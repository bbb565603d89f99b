"""The run store: a run is a folder of Parquet tables, ``manifest.json`` and study results.

The SQLite files that runs share (the call cache of the backends, the
embedding cache of the encoders) are opened by :mod:`realitycheck.store.sqlite_files`.
"""

from realitycheck.store._arrays import from_numpy, from_texts, scalar, to_numpy
from realitycheck.store._atomic import atomic_file, atomic_folder, write_atomically
from realitycheck.store._check import CheckReport, Finding, check_run
from realitycheck.store._columns import (
    ResponseBatch,
    arrow_column,
    label_table,
    record_schema,
    records_table,
    score_table,
)
from realitycheck.store._fingerprint import changed_files, digest, fingerprint
from realitycheck.store._frames import RunData
from realitycheck.store._fs import RemoteFolder, is_uri, shown_uri
from realitycheck.store._lock import LOCK_NAME, RunLock, lock_holder
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
from realitycheck.store._secrets import REDACTED, register_secret_env, scrub, scrub_text
from realitycheck.store._store import RunStore, unreadable

__all__ = [
    "LOCK_NAME",
    "REDACTED",
    "SCHEMA_VERSION",
    "CheckReport",
    "Finding",
    "RemoteFolder",
    "ResponseBatch",
    "RunData",
    "RunLock",
    "RunStore",
    "StudyFigure",
    "StudyResult",
    "StudyTable",
    "arrow_column",
    "atomic_file",
    "atomic_folder",
    "changed_files",
    "check_run",
    "digest",
    "fingerprint",
    "folder_name",
    "from_numpy",
    "from_texts",
    "is_uri",
    "label_table",
    "load_results",
    "lock_holder",
    "package_versions",
    "record_schema",
    "records_table",
    "register_secret_env",
    "result_dir",
    "save_result",
    "scalar",
    "score_table",
    "scrub",
    "scrub_secrets",
    "scrub_text",
    "shown_uri",
    "to_numpy",
    "unreadable",
    "write_atomically",
]
