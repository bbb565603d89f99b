"""What the tests of a component's columnar path against its per-record path share."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from realitycheck.records import Example, Response
from realitycheck.store import RunStore


def run_holding(path: Path, examples: Sequence[Example], responses: Sequence[Response]) -> RunStore:
    """A new run at ``path`` holding ``examples`` and ``responses``."""
    store = RunStore(path)
    store.append(examples)
    store.append(responses)
    return store


def through_base(component: Any, base: type, method: str) -> Any:
    """The same component (same key and spec) with ``base``'s per-record ``method``."""
    kind = type(component)
    per_record = type(f"PerRecord{kind.__name__}", (kind,), {method: getattr(base, method)})
    return per_record(**component.params())


def stored_rows(store: RunStore, table: str) -> list[dict]:
    """Every row of the run's ``table``, sorted by response id."""
    return sorted(store.arrow(table).to_pylist(), key=lambda r: r["response_id"])
