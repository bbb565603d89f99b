"""Checking a run part by part, and setting aside what cannot be read.

:func:`check_run` reads every file of a run and reports, one finding per
problem: unreadable or truncated Parquet parts, parts whose columns are
missing or of another type than their record type's (a text ``value`` among
scores), repeated ids inside one file, responses without
their example, datasets with fewer records than the manifest says, source
files that changed since they were loaded, a damaged manifest, temporary files
left by a killed write, and the writer that holds the folder's lock, or the
stale lock of one that no longer runs on this host.

With ``repair=True`` unreadable or malformed parts (and a damaged manifest)
are moved to ``RUN/quarantine/<time>/``, temporary files and a stale lock
are deleted (a live holder's lock, or another host's, is left alone), and the
manifest entries of datasets that lost records are removed, so the next
stage loads them again; labels, scores and metrics that were only in a moved
part are computed again by the next ``label``, ``detect`` or ``evaluate``.
When records (examples, responses, labels or scores) are set aside, the
stored metrics and agreement computed from them (their tables and
``metrics.csv``/``agreement.csv``) are set aside with them, so no report
shows numbers that the stored records no longer support.

A run on object storage (``s3://…``) is checked and repaired the same way,
its objects moved under the run's own ``quarantine/<time>/`` prefix; there an
object is written whole or not at all, so no write leaves a temporary file.
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
from realitycheck.records import AgreementResult, Example, Label, MetricResult, Response, Score
from realitycheck.store._check_folder import CheckedFolder, LocalRun, RemoteRun
from realitycheck.store._columns import record_schema
from realitycheck.store._files import MANIFEST
from realitycheck.store._fingerprint import changed_files, fingerprint
from realitycheck.store._fs import remote_folder
from realitycheck.store._lock import LOCK_NAME, RunLock, lock_holder, lock_is_stale
from realitycheck.store._manifest import READABLE_VERSIONS
from realitycheck.store._read import upgraded
from realitycheck.store._secrets import scrub_text

__all__ = ["CheckReport", "Finding", "check_run"]


_TYPES: dict[str, type[Any]] = {
    cls.table: cls for cls in (Example, Response, Label, Score, MetricResult, AgreementResult)
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
        path: The file (or folder) it concerns, as it may be printed: a local
            path, or for a run on object storage its URI (credentials
            redacted) and the file's name.
        problem: What is wrong, in a sentence.
        repair: What ``repair`` does about it: ``quarantine`` (move the file),
            ``delete`` (a temporary file), ``unlock`` (remove a lock left by a
            process that no longer runs on this host), ``reload`` (forget a dataset's manifest
            entry so the next stage loads it again) or ``""`` (nothing it can do).
        name: The file's name inside the run (``labels.parts/x.parquet``);
            ``""`` for a file outside it (a dataset's source).
    """

    path: Path | str
    problem: str
    repair: str = ""
    name: str = ""


@dataclass
class CheckReport:
    """What :func:`check_run` found and did.

    Attributes:
        run: The run folder (or the run's URI, credentials redacted).
        files: How many files were read.
        findings: Every problem found.
        moved: ``(from, to)`` of each file moved to quarantine.
        recompute: What the next stages compute again, one sentence each.
        notes: Other repairs made, one sentence each (a stale lock removed).
        repaired: Whether the repairs were made.
    """

    run: Path | str
    files: int = 0
    findings: list[Finding] = field(default_factory=list)
    moved: list[tuple[Path | str, Path | str]] = field(default_factory=list)
    recompute: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
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


def _fetch(folder: CheckedFolder, name: str, out: CheckReport) -> bytes | None:
    """The bytes of ``name``, or None after recording that they could not be fetched.

    A disk or network fault says nothing of the content, so it is reported
    with no repair: a rerun of the check reads the file again.
    """
    try:
        return folder.read_bytes(name)
    except (OSError, RunFolderError) as exc:
        problem = f"could not be read ({_error(exc)}); nothing was changed, check again"
        out.findings.append(Finding(folder.shown(name), problem, name=name))
        return None


def _error(exc: BaseException) -> str:
    return scrub_text(f"{type(exc).__name__}: {exc}")


def _check_part(folder: CheckedFolder, name: str, table: str, out: CheckReport) -> pa.Table | None:
    """Read one Parquet file; return it, or None after recording why it is unusable."""
    out.files += 1
    path = folder.shown(name)
    raw = _fetch(folder, name, out)
    if raw is None:
        return None
    try:
        data = pq.read_table(pa.BufferReader(raw))
    except (pa.ArrowException, OSError, ValueError) as exc:  # the bytes are not a table
        out.findings.append(Finding(path, f"unreadable: {_error(exc)}", "quarantine", name))
        return None
    cls = _TYPES.get(table.split(".")[0])
    if cls is None:
        return data
    data = upgraded(data, cls)  # a file of an older schema, under the current names
    missing = [c for c in _required(cls) if c not in data.column_names]
    if missing:
        problem = f"missing the columns {missing} of {table}"
        out.findings.append(Finding(path, problem, "quarantine", name))
        return None
    wrong = _wrong_types(data.schema, record_schema(cls))
    if wrong:
        problem = f"columns of the wrong type for {table}: {'; '.join(wrong)}"
        out.findings.append(Finding(path, problem, "quarantine", name))
        return None
    key = [k for k in cls.key if k in data.column_names]
    frame = data.select(key).to_pandas()
    repeated = int(frame.duplicated().sum())
    if repeated:
        problem = f"{repeated} rows repeat a {'/'.join(key)} of an earlier row"
        out.findings.append(Finding(path, problem, name=name))
    return data


def _kind(kind: pa.DataType) -> str:
    """The family of an Arrow type that the store's readers accept for one field type."""
    if pa.types.is_dictionary(kind):
        return _kind(kind.value_type)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "text"
    if pa.types.is_boolean(kind):
        return "bool"
    if pa.types.is_integer(kind):
        return "int"
    if pa.types.is_floating(kind):
        return "float"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"list of {_kind(kind.value_type)}"
    return str(kind)


def _wrong_types(stored: pa.Schema, expected: pa.Schema) -> list[str]:
    """``'value': string, not double`` for each column whose type the record type does not take.

    An all-null column fits any type; a float field also takes integers (they
    are read as floats without loss of meaning). Text is never taken for a
    number or a flag, even when it would parse: readers of the run would then
    get text where they count on numbers.
    """
    wrong = []
    for f in stored:
        if f.name not in expected.names or pa.types.is_null(f.type):
            continue
        want = expected.field(f.name).type
        have, need = _kind(f.type), _kind(want)
        if have == need or (need == "float" and have == "int"):
            continue
        if need == "list of text" and have == "list of null":
            continue
        wrong.append(f"{f.name!r} holds {f.type}, not {want}")
    return wrong


def _check_manifest(
    folder: CheckedFolder, found: bool, table_files: list[tuple[str, str]], out: CheckReport
) -> dict[str, Any]:
    path = folder.shown(MANIFEST)
    if not found:
        if any("/" not in name for _, name in table_files):
            out.findings.append(Finding(path, "missing although the run holds tables"))
        return {}
    out.files += 1
    raw = _fetch(folder, MANIFEST, out)
    if raw is None:
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # not UTF-8, or not JSON
        out.findings.append(Finding(path, f"unreadable: {exc}", "quarantine", MANIFEST))
        return {}
    if not isinstance(data, dict):
        problem = "does not hold a JSON object"
        out.findings.append(Finding(path, problem, "quarantine", MANIFEST))
        return {}
    version = data.get("schema_version", READABLE_VERSIONS[-1])
    if version not in READABLE_VERSIONS:
        readable = ", ".join(map(str, READABLE_VERSIONS))
        problem = f"schema version {version}, not one this realitycheck reads ({readable})"
        out.findings.append(Finding(path, problem, name=MANIFEST))
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
    folder: CheckedFolder,
    manifest: dict[str, Any],
    tables: dict[str, list[pa.Table]],
    out: CheckReport,
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
        problem = f"{orphans} responses have no stored example"
        out.findings.append(Finding(folder.shown("responses.parquet"), problem))
    lost = []
    per_dataset = examples["dataset"].value_counts()
    for key, entry in dict(manifest.get("datasets") or {}).items():
        if not isinstance(entry, dict) or entry.get("generation_input"):
            continue
        name = entry.get("name") or (entry.get("spec") or {}).get("name") or key
        have, want = int(per_dataset.get(name, 0)), int(entry.get("examples", 0))
        if have < want:
            lost.append(key)
            problem = f"dataset {name!r} has {have} of its {want} examples stored"
            out.findings.append(Finding(folder.shown(MANIFEST), problem, "reload", MANIFEST))
    return lost


def check_run(run: str | Path, *, repair: bool = False) -> CheckReport:
    """Check every part of a run; with ``repair``, quarantine what cannot be used.

    ``run`` is a folder or the URI of a run on object storage (``s3://…``).

    Raises:
        RunFolderError: When the folder (or the bucket) does not exist, or
            ``repair`` is asked while another process holds the run's lock.
    """
    folder = _folder(run)
    files, has_manifest = folder.table_files(), folder.is_file(MANIFEST)
    if isinstance(folder, RemoteRun) and not (has_manifest or files):
        raise RunFolderError(
            f"There is no run at {folder.location}: no manifest.json and no table there.",
            path=folder.location,
        )
    out = CheckReport(run=folder.location)
    holder = lock_holder(folder.lock_target)
    if holder is not None:
        who = (
            f"pid {holder.get('pid')} on {holder.get('host')} "
            f"(`{holder.get('command')}`, since {holder.get('since')})"
        )
        if lock_is_stale(holder):
            problem = f"stale: left by {who}, which no longer runs on this host"
            out.findings.append(Finding(folder.shown(LOCK_NAME), problem, "unlock", LOCK_NAME))
        else:
            out.findings.append(Finding(folder.shown(LOCK_NAME), f"held by {who}", name=LOCK_NAME))
    manifest = _check_manifest(folder, has_manifest, files, out)
    tables: dict[str, list[pa.Table]] = {}
    for table, name in files:
        data = _check_part(folder, name, table, out)
        if data is not None:
            tables.setdefault(table, []).append(data)
    lost = _check_counts(folder, manifest, tables, out)
    out.findings += [
        Finding(folder.shown(n), "temporary file left by an interrupted write", "delete", n)
        for n in folder.temporary_files()
    ]
    if repair and any(f.repair for f in out.findings):
        with RunLock(folder.lock_target, command="realitycheck check --repair") as lock:
            _repair(folder, out, lost, manifest)
        if lock.note:  # a stale lock, taken over and released
            out.notes.append(f"removed the stale lock {folder.shown(LOCK_NAME)}")
    return out


def _folder(run: str | Path) -> CheckedFolder:
    """The run's files: a folder, or a run on object storage, whose place must exist.

    Nothing is created: a mistyped location is an error, not an empty run.
    """
    remote = remote_folder(run)
    if remote is None:
        path = Path(run)
        if not path.is_dir():
            raise RunFolderError("The run folder does not exist.", path=path)
        return LocalRun(path)
    if not remote.is_local:
        remote.check()  # the bucket; nothing is created there
    elif not Path(remote.root).is_dir():
        raise RunFolderError(f"There is no run at {remote.shown}.", path=remote.shown)
    return RemoteRun(remote)


def _repair(
    folder: CheckedFolder, out: CheckReport, lost: list[str], manifest: dict[str, Any]
) -> None:
    target = "quarantine/" + dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    tables_hit: set[str] = set()
    moved: set[str] = set()
    for finding in out.findings:
        name = finding.name
        if finding.repair == "delete":
            folder.delete(name)
        if finding.repair != "quarantine" or not folder.is_file(name):
            continue
        dest = f"{target}/{name}"
        folder.move(name, dest)
        moved.add(name)
        out.moved.append((finding.path, folder.shown(dest)))
        if name.endswith(".parquet"):
            table = name.split("/")[0].removesuffix(".parts").removesuffix(".parquet")
            tables_hit.add(table.split(".")[0])
    records_hit = tables_hit & {"examples", "responses", "labels", "scores"}
    if records_hit:
        lost = sorted({*lost, *_loaded(manifest)})
        derived = _set_aside_derived(folder, out, target, moved)
        if derived:
            tables_hit -= set(derived)
            out.recompute.append(
                f"{', '.join(derived)}: set aside, as they were computed from the "
                f"{', '.join(sorted(records_hit))} that were; run evaluate again to compute them"
            )
    raw = folder.files.read_manifest() if lost else None
    if raw is not None:
        data = json.loads(raw.decode("utf-8"))
        for key in lost:
            data.get("datasets", {}).pop(key, None)
        text = json.dumps(data, indent=2, sort_keys=True)
        folder.files.write_manifest(text.encode("utf-8"))
        out.recompute.append(f"datasets loaded again by the next stage: {', '.join(lost)}")
    out.recompute += [
        f"{t}: {_RECOMPUTE.get(t, 'rewritten by the stage that writes it')}"
        for t in sorted(tables_hit)
    ]
    if MANIFEST in moved:
        out.recompute.append(
            "manifest.json: written anew by the next stage, which loads every dataset again"
        )
    out.repaired = True


_DERIVED = ("metrics", "agreement")  # computed by evaluate from examples, responses, labels, scores


def _set_aside_derived(
    folder: CheckedFolder, out: CheckReport, target: str, moved: set[str]
) -> list[str]:
    """Move the stored metrics and agreement (tables and CSV exports) to quarantine.

    They were computed from records that were just set aside, so they must
    not outlive them: a report would show numbers no stored record supports.
    Return the derived tables that had files to move.
    """
    names = [n for t, n in folder.table_files() if t.split(".")[0] in _DERIVED]
    names += [f"{t}.csv" for t in _DERIVED]
    hit = []
    for name in names:
        if name in moved or not folder.is_file(name):
            continue
        dest = f"{target}/{name}"
        folder.move(name, dest)
        moved.add(name)
        out.moved.append((folder.shown(name), folder.shown(dest)))
        hit.append(name.split("/")[0].split(".")[0])
    return sorted(set(hit))


def _loaded(manifest: dict[str, Any]) -> list[str]:
    """Dataset keys loaded whole (not only as generation input)."""
    return [
        k
        for k, e in dict(manifest.get("datasets") or {}).items()
        if isinstance(e, dict) and not e.get("generation_input")
    ]
