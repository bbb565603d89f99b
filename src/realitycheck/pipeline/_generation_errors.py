"""The run's table of generations that failed: never fake responses, always retried.

``RUN/generation_errors.parquet`` holds one row per (example, prompt variant,
backend, plan) whose calls failed for good (after the backend's retries). The
file is rewritten atomically after each batch: a later success removes the row,
another failure updates it and counts the attempt, so the table always lists
what is still missing. A rerun of the same generation retries every row.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
import pyarrow as pa

from realitycheck.store import RunStore, scrub_text

__all__ = ["ERRORS_TABLE", "ERROR_COLUMNS", "generation_errors", "update_generation_errors"]

ERRORS_TABLE = "generation_errors"
"""The table's name in the run (the file ``RUN/generation_errors.parquet``)."""
ERROR_COLUMNS = (
    "response_id",
    "example_id",
    "prompt_variant",
    "backend",
    "plan",
    "generation",
    "error",
    "attempts",
    "updated",
)


def generation_errors(store: RunStore) -> pd.DataFrame:
    """Return the generations of a run that are still missing because their calls failed."""
    table = store.read_file(ERRORS_TABLE)
    if table is None:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in ERROR_COLUMNS})
    return table.to_pandas()


def update_generation_errors(
    store: RunStore, *, failed: Iterable[Mapping[str, Any]], succeeded: Iterable[str]
) -> pd.DataFrame:
    """Add or update the rows of ``failed``, drop those of ``succeeded``; write atomically.

    Args:
        store: The run.
        failed: Rows with every column of :data:`ERROR_COLUMNS` but ``attempts``
            and ``updated``, which are filled here.
        succeeded: Response ids now stored.

    Returns:
        The table as written.
    """
    table = generation_errors(store)
    done = set(succeeded)
    new = list(failed)
    if not new and not done & set(table["response_id"]):
        return table
    attempts = dict(zip(table["response_id"], table["attempts"], strict=True))
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    rows = [
        {
            **row,
            "error": scrub_text(str(row["error"])),  # a server may echo the API key
            "attempts": int(attempts.get(row["response_id"], 0)) + 1,
            "updated": now,
        }
        for row in new
    ]
    redone = done | {row["response_id"] for row in rows}
    kept = table[~table["response_id"].isin(redone)]
    parts = [f for f in (kept, pd.DataFrame(rows, columns=list(ERROR_COLUMNS))) if not f.empty]
    out = pd.concat(parts, ignore_index=True) if parts else kept
    out = out.astype({"attempts": "int64"}).reset_index(drop=True)
    rows_out = None if out.empty else pa.Table.from_pandas(out, preserve_index=False)
    store.write_file(ERRORS_TABLE, rows_out)  # atomic, local or remote
    return out
