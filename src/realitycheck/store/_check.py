"""Checking a run folder part by part, and setting aside what cannot be read.

:func:`check_run` reads every file of a run and reports, one finding per
problem: unreadable or truncated Parquet parts, parts whose columns do not
match their record type, repeated ids inside one file, responses without
their example, datasets with fewer records than the manifest says, source
files that changed since they were loaded, a damaged manifest, temporary files
left by a killed write, and the writer that holds the folder's lock.

With ``repair=True`` unreadable or malformed parts (and a damaged manifest)
are moved to ``RUN/quarantine/<time>/``, temporary files are deleted, and the
manifest entries of datasets that lost records are removed, so the next
stage loads them again; labels, scores and metrics that were only in a moved
part are computed again by the next ``label``, ``detect`` or ``evaluate``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from realitycheck.errors import RunFolderError
from realitycheck.records import Example, Label, MetricResult, Response, Score
from realitycheck.store._files import atomic_write_bytes
from realitycheck.store._fingerprint import changed_files, fingerprint
from realitycheck.store._fs import is_uri, shown_uri
from realitycheck.store._lock import LOCK_NAME, RunLock, lock_holder
from realitycheck.store._manifest import SCHEMA_VERSION

__all__ = ["CheckReport", "Finding", "check_run"]

_TYPES: dict[str, type[Any]] = {
    cls.table: cls for cls in (Example, Response, Label, Score, MetricResult)
}
_RECOMPUTE = {
    "examples": "the datasets they came from are loaded again by the next label, detect "
    "or evaluate command",
    "responses": "the datasets they came from are loaded again by the next label, detect or "
    "evaluate command (generated responses: by the same generate command)",
    "labels": "labels are computed again by the next label or evaluate command (human "
    "labels come back with their dataset)",
    "scores": "scores are computed again by the next detect or evaluate command (recorded "
    "scores come back with their dataset)",
    "metrics": "metrics are computed again by the next evaluate command",
}


@dataclass(frozen=True)
class Finding:
    """One problem found in a run.

    Attributes:
        path: The file (or folder) it concerns.
        problem: What is wrong, in a sentence.
        repair: What ``repair`` does about it: ``quarantine`` (move the file),
            ``delete`` (a temporary file), ``reload`` (forget a dataset's manifest
            entry so the next stage loads it again) or ``""`` (nothing it can do).
    """

    path: Path
    problem: str
    repair: str = ""


@dataclass
class CheckReport:
    """What :func:`check_run` found and did.

    Attributes:
        run: The run folder.
        files: How many files were read.
        findings: Every problem found.
        moved: ``(from, to)`` of each file moved to quarantine.
        recompute: What the next stages compute again, one sentence each.
        repaired: Whether the repairs were made.
    """

    run: Path
    files: int = 0
    findings: list[Finding] = field(default_factory=list)
    moved: list[tuple[Path, Path]] = field(default_factory=list)
    recompute: list[str] = field(default_factory=list)
    repaired: bool = False

    @property
    def ok(self) -> bool:
        """Whether nothing is wrong, or everything wrong was repaired."""
        return all(self.repaired and f.repair for f in self.findings)


def _required(cls: type[Any]) -> list[str]:
    return [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]


def _check_part(path: Path, table: str, out: CheckReport) -> pa.Table | None:
    """Read one Parquet file; return it, or None after recording why it is unusable."""
    out.files += 1
    try:
        data = pq.read_table(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        out.findings.append(Finding(path, f"unreadable: {type(exc).__name__}: {exc}", "quarantine"))
        return None
    cls = _TYPES.get(table.split(".")[0])
    if cls is None:
        return data
    missing = [c for c in _required(cls) if c not in data.column_names]
    if missing:
        out.findings.append(
            Finding(path, f"missing the columns {missing} of {table}", "quarantine")
        )
        return None
    key = [k for k in cls.key if k in data.column_names]
    frame = data.select(key).to_pandas()
    repeated = int(frame.duplicated().sum())
    if repeated:
        out.findings.append(
            Finding(path, f"{repeated} rows repeat a {'/'.join(key)} of an earlier row")
        )
    return data


def _table_files(run: Path) -> list[tuple[str, Path]]:
    files = [(p.stem, p) for p in sorted(run.glob("*.parquet"))]
    for parts in sorted(run.glob("*.parts")):
        if parts.is_dir():
            table = parts.name[: -len(".parts")]
            files += [(table, p) for p in sorted(parts.glob("*.parquet"))]
    return files


def _check_manifest(run: Path, out: CheckReport) -> dict[str, Any]:
    path = run / "manifest.json"
    if not path.exists():
        if any(run.glob("*.parquet")):
            out.findings.append(Finding(path, "missing although the run holds tables"))
        return {}
    out.files += 1
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        out.findings.append(Finding(path, f"unreadable: {exc}", "quarantine"))
        return {}
    if not isinstance(data, dict):
        out.findings.append(Finding(path, "does not hold a JSON object", "quarantine"))
        return {}
    if data.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        out.findings.append(
            Finding(path, f"schema version {data['schema_version']}, not {SCHEMA_VERSION}")
        )
    for key, entry in dict(data.get("datasets") or {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("spec"), dict):
            out.findings.append(Finding(path, f"the entry of dataset {key!r} has no spec"))
            continue
        recorded = entry.get("fingerprint")
        if not recorded:
            continue
        files = [Path(p) for p in recorded]
        now = fingerprint([p for p in files if p.exists()], recorded)
        for line in changed_files(recorded, now):
            name = entry.get("name") or key
            out.findings.append(
                Finding(
                    Path(line.split(" (")[0]),
                    f"source of dataset {name!r} differs from what was loaded: {line}; "
                    f"reload it with --replace-dataset {name}",
                )
            )
    return data


def _check_counts(
    run: Path, manifest: dict[str, Any], tables: dict[str, list[pa.Table]], out: CheckReport
) -> list[str]:
    """Compare records with the manifest; return the dataset keys that lost records."""
    if "examples" not in tables or "responses" not in tables:
        return []
    examples = pa.concat_tables(tables["examples"]).select(["example_id", "dataset"]).to_pandas()
    examples = examples.drop_duplicates("example_id")
    responses = pa.concat_tables(tables["responses"]).select(["response_id", "example_id"])
    responses = responses.to_pandas().drop_duplicates("response_id")
    orphans = int((~responses["example_id"].isin(examples["example_id"])).sum())
    if orphans:
        out.findings.append(
            Finding(run / "responses.parquet", f"{orphans} responses have no stored example")
        )
    lost = []
    per_dataset = examples["dataset"].value_counts()
    for key, entry in dict(manifest.get("datasets") or {}).items():
        if not isinstance(entry, dict) or entry.get("generation_input"):
            continue
        name = entry.get("name") or (entry.get("spec") or {}).get("name") or key
        have, want = int(per_dataset.get(name, 0)), int(entry.get("examples", 0))
        if have < want:
            lost.append(key)
            out.findings.append(
                Finding(
                    run / "manifest.json",
                    f"dataset {name!r} has {have} of its {want} examples stored",
                    "reload",
                )
            )
    return lost


def check_run(run: str | Path, *, repair: bool = False) -> CheckReport:
    """Check every part of a run folder; with ``repair``, quarantine what cannot be used.

    Raises:
        RunFolderError: When the folder does not exist, or ``repair`` is asked while
            another process holds the run's lock.
    """
    if is_uri(run):
        raise RunFolderError(
            f"`check` reads a local or shared run folder; {shown_uri(str(run))} is on object "
            "storage. There a damaged part is named when read: delete that object and the "
            "next stage recomputes what it held.",
            path=shown_uri(str(run)),
        )
    run = Path(run)
    if not run.is_dir():
        raise RunFolderError("The run folder does not exist.", path=run)
    out = CheckReport(run=run)
    holder = lock_holder(run)
    if holder is not None:
        out.findings.append(
            Finding(
                run / LOCK_NAME,
                f"held by pid {holder.get('pid')} on {holder.get('host')} "
                f"(`{holder.get('command')}`, since {holder.get('since')})",
            )
        )
    manifest = _check_manifest(run, out)
    tables: dict[str, list[pa.Table]] = {}
    for table, path in _table_files(run):
        data = _check_part(path, table, out)
        if data is not None:
            tables.setdefault(table, []).append(data)
    lost = _check_counts(run, manifest, tables, out)
    temps = sorted(p for p in run.rglob(".*.tmp") if "quarantine" not in p.parts)
    out.findings += [
        Finding(p, "temporary file left by an interrupted write", "delete") for p in temps
    ]
    if repair and any(f.repair for f in out.findings):
        with RunLock(run, command="realitycheck check --repair"):
            _repair(run, out, lost, manifest)
    return out


def _repair(run: Path, out: CheckReport, lost: list[str], manifest: dict[str, Any]) -> None:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    target = run / "quarantine" / stamp
    tables_hit: set[str] = set()
    for finding in out.findings:
        path = finding.path
        if finding.repair == "delete":
            path.unlink(missing_ok=True)
        if finding.repair != "quarantine" or not path.is_file():
            continue
        dest = target / path.relative_to(run)
        dest.parent.mkdir(parents=True, exist_ok=True)
        path.replace(dest)
        out.moved.append((path, dest))
        if path.suffix == ".parquet":
            table = path.parent.name[: -len(".parts")] if path.parent != run else path.stem
            tables_hit.add(table.split(".")[0])
    if tables_hit & {"examples", "responses", "labels", "scores"}:
        lost = sorted({*lost, *_loaded(manifest)})
    if lost and (run / "manifest.json").is_file():
        data = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
        for key in lost:
            data.get("datasets", {}).pop(key, None)
        text = json.dumps(data, indent=2, sort_keys=True)
        atomic_write_bytes(run / "manifest.json", text.encode("utf-8"))
        out.recompute.append(f"datasets loaded again by the next stage: {', '.join(lost)}")
    out.recompute += [
        f"{t}: {_RECOMPUTE.get(t, 'rewritten by the stage that writes it')}"
        for t in sorted(tables_hit)
    ]
    if any(p.name == "manifest.json" for p, _ in out.moved):
        out.recompute.append(
            "manifest.json: written anew by the next stage, which loads every dataset again"
        )
    out.repaired = True


def _loaded(manifest: dict[str, Any]) -> list[str]:
    """Dataset keys loaded whole (not only as generation input)."""
    return [
        k
        for k, e in dict(manifest.get("datasets") or {}).items()
        if isinstance(e, dict) and not e.get("generation_input")
    ]
