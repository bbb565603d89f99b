"""The manifest entry a generation or choice stage keeps of each of its runs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from realitycheck.backends import Backend
from realitycheck.records import Example
from realitycheck.registry import Component
from realitycheck.store import RunStore

__all__ = ["stage_entry"]


def stage_entry(
    store: RunStore,
    section: str,
    key: str,
    backend: Backend,
    plan: Component,
    *,
    variants: Iterable[str],
    examples: Sequence[Example],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the manifest's entries ``config[section]`` and its entry ``key``, updated.

    The entry (a copy; the caller stores it under ``key`` of the returned
    entries) names the backend and the plan (spec, key, model) and lists the
    prompt ``variants`` and the datasets of the ``examples`` of every run so
    far, sorted.
    """
    manifest = store.read_manifest()
    entries: dict[str, Any] = dict(manifest.get("config", {}).get(section, {}))
    entry: dict[str, Any] = dict(entries.get(key, {}))
    entry.update(
        backend=backend.spec,
        plan=plan.spec,
        # (not "backend_key": the manifest redacts entries whose name ends in "key")
        component_keys={"backend": backend.key, "plan": plan.key},
        model=str(getattr(backend, "model", "") or backend.key),
    )
    entry["variants"] = sorted({*entry.get("variants", []), *variants})
    entry["datasets"] = sorted({*entry.get("datasets", []), *(e.dataset for e in examples)})
    return entries, entry
