"""The run store: a run is a folder of Parquet tables plus ``manifest.json``."""

from realitycheck.store._frames import RunData
from realitycheck.store._manifest import SCHEMA_VERSION, package_versions, scrub_secrets
from realitycheck.store._store import RunStore

__all__ = ["SCHEMA_VERSION", "RunData", "RunStore", "package_versions", "scrub_secrets"]
