"""Whether a component's stored records were made as it would make them now.

The run's manifest records, per component key, the spec its records came
from. A stage that finds records under a key compares that spec with the
component's: a changed parameter default or version is noted (the records
are kept), and records read from other features — a proxy model's view
(:mod:`realitycheck.pipeline._proxy_features`), another proxy's, or the
responses' own generation-time features — are never joined by new ones
under the same key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from realitycheck.errors import InvalidInputError
from realitycheck.pipeline._report import StageReport
from realitycheck.store import scrub_secrets

__all__ = ["same_records", "spec_change"]


def spec_change(before: Any, spec: Mapping[str, Any]) -> str:
    """Say how ``spec`` differs from ``before``, the spec the run recorded ("" when it does not).

    The key names only the parameters set away from their defaults, so a
    changed default (a judge's ``invalid_as``) or a new prompt keeps the key
    while the records stored under it were made otherwise.
    """
    now = scrub_secrets(dict(spec))
    if not isinstance(before, Mapping) or before == now:
        return ""
    old, new = before.get("params", {}), now.get("params", {})
    names = sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))
    shown = [
        f"{n}: {json.dumps(old.get(n), sort_keys=True)[:60]} -> "
        f"{json.dumps(new.get(n), sort_keys=True)[:60]}"
        for n in names[:3]
    ]
    if before.get("version") != now.get("version"):
        shown.insert(0, f"version {before.get('version')} -> {now.get('version')}")
    return "; ".join(shown) or "its spec changed"


def _feature_source(spec: Mapping[str, Any], *, full: bool = False) -> str:
    """Whose features a detector's records read: the proxy's in its spec, else the responses'.

    ``full`` shows the proxy's whole spec, not only its model.
    """
    proxy = spec.get("proxy")
    if not isinstance(proxy, Mapping):
        return "the responses' own features"
    if full:
        return f"the features of the proxy {json.dumps(dict(proxy), sort_keys=True)[:300]}"
    return f"the features of the proxy model {proxy.get('model')!r}"


def same_records(
    key: str,
    found: Any,
    spec: Mapping[str, Any],
    n_stored: int,
    n_todo: int,
    report: StageReport,
) -> bool:
    """Check ``key``'s stored records against ``spec``; return whether to record ``spec``.

    ``found`` is the spec the run recorded for ``key``, ``n_stored`` its
    records in the run, ``n_todo`` those to compute now. Records read from
    other features (a proxy's, another proxy's, the responses' own) than
    ``spec`` reads are never joined by new ones: that is refused. When all
    of them stand, a note says so and the recorded spec stays (it says whose
    features they read). Otherwise a changed spec is noted (:func:`spec_change`)
    and recorded.

    Raises:
        InvalidInputError: New records would join stored ones read from other features.
    """
    before: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    other_source = bool(before) and before.get("proxy") != _as_stored(spec).get("proxy")
    reused = report.reused.get(key, 0)
    if other_source and n_stored:
        if n_todo:
            _refuse_mixed_sources(key, before, spec, n_stored, n_todo)
        if reused:
            report.notes.append(
                f"{key}: the {reused} stored records were computed from "
                f"{_feature_source(before)}; they are kept as they are, and so is their spec."
            )
        return False
    changed = spec_change(found, spec) if reused else ""
    if changed:
        report.notes.append(
            f"{key}: the {reused} stored records were made with another version of it "
            f"({changed}); they are kept as they are. To compute them again with this one, "
            "run the stage into a new run folder."
        )
    return True


def _as_stored(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` as the manifest holds it (secrets scrubbed, JSON values), to compare with it."""
    return dict(json.loads(json.dumps(scrub_secrets(dict(spec)), sort_keys=True, default=str)))


def _refuse_mixed_sources(
    key: str, before: Mapping[str, Any], now: Mapping[str, Any], stored: int, todo: int
) -> None:
    """Refuse to add records read from other features to those stored under ``key``.

    Raises:
        InvalidInputError: Always: the stored records read the responses' own
            features and the new ones would read a proxy's, or another proxy's.
    """
    full = _feature_source(before) == _feature_source(now)
    old, new = _feature_source(before, full=full), _feature_source(now, full=full)
    raise InvalidInputError(
        f"The run's {stored} stored {key} scores were computed from {old}; the {todo} still "
        f"to score would be computed from {new}, and one key would mix the two. Score them "
        "into a new run folder (--out), or with the same features as before."
    )
