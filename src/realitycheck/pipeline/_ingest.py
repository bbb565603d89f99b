"""Loading a dataset into a run, guarded by the fingerprint of its source files.

The manifest records, per dataset key, the name its records carry, its spec
and the SHA-256 and size of every file it read; each example carries one
SHA-256 over them all in ``meta["source_sha256"]``. A rerun compares the files
with that record: unchanged, the dataset is not read again; changed, the
stage stops and names the file, and ``replace=True`` (``--replace-dataset``)
reloads it. Replacing keeps the labels and scores of every response whose text
and example are unchanged and drops those of the others, which the next label
or detect stage then computes again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from realitycheck.datasets import Dataset, TableBundle
from realitycheck.errors import DataNotFoundError, InvalidInputError
from realitycheck.pipeline._report import StageReport
from realitycheck.progress import NullProgress, Progress
from realitycheck.records import Example, Response
from realitycheck.records.keys import is_stored
from realitycheck.store import RunStore, changed_files, digest, fingerprint

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ingest"]


def _name_of(key: str, entry: Mapping[str, Any]) -> str:
    """The name an entry's records carry (older manifests: the registered name)."""
    spec = entry.get("spec") or {}
    return str(entry.get("name") or spec.get("name") or key)


def _replace_hint(dataset: Dataset) -> str:
    return (
        f"Pass --replace-dataset {dataset.run_name} to reload it (labels and scores of "
        "changed responses are recomputed, the others kept), or use another run folder."
    )


def ingest(
    store: RunStore,
    dataset: Dataset,
    *,
    replace: bool = False,
    progress: Progress | None = None,
) -> StageReport:
    """Load a dataset's examples, responses, human labels and recorded scores into a run.

    A dataset already loaded with the same spec and unchanged source files is
    not read again.

    Args:
        store: The run.
        dataset: The dataset to load.
        replace: Reload the dataset even if the run holds it with other source
            bytes or other settings.
        progress: Where to report progress.

    Raises:
        InvalidInputError: When the run holds the dataset with other source bytes or
            other settings and ``replace`` is false, or when it yields no examples.
    """
    report = StageReport()
    entries: dict[str, Any] = dict(store.read_manifest().get("datasets") or {})
    entry = entries.get(dataset.key)
    others = [
        k for k, e in entries.items() if k != dataset.key and _name_of(k, e) == dataset.run_name
    ]
    if others and not replace:
        raise InvalidInputError(
            f"The run already holds the dataset {dataset.run_name!r} loaded as {others[0]!r}; "
            f"this command asks for {dataset.key!r}, other settings of it that would mix "
            f"with the stored records. {_replace_hint(dataset)}",
            path=store.manifest_path,
            field=f"datasets.{others[0]}",
        )
    reusable = entry is not None and entry.get("spec") == dataset.spec and not replace
    try:
        paths: list[Path] | None = dataset.sources()
    except DataNotFoundError:
        if not reusable:
            raise
        paths = None
    prints = fingerprint(paths or [], (entry or {}).get("fingerprint"))
    if entry is not None and reusable:
        recorded = entry.get("fingerprint")
        missing = paths is None or not all(p.exists() for p in paths)
        if missing:
            report.notes.append(
                f"The source files of dataset {dataset.run_name!r} were not found; its stored "
                "records are used as they are, unverified."
            )
        elif recorded is not None and not entry.get("generation_input"):
            changed = changed_files(recorded, prints)
            if changed:
                raise InvalidInputError(
                    f"The source of dataset {dataset.run_name!r} changed since it was loaded "
                    f"into this run: {'; '.join(changed)}. {_replace_hint(dataset)}",
                    path=changed[0].split(" (")[0],
                )
        if int(entry.get("examples", 0)) > 0 or entry.get("generation_input"):
            if not missing and recorded != prints:
                store.update_manifest(datasets={dataset.key: {**entry, "fingerprint": prints}})
            report.reused[dataset.key] = int(entry.get("responses", 0))
            return report
    with (progress or NullProgress()).task(f"loading {dataset.key}", None) as task:
        bundle = dataset.load_tables(progress=task.advance)
    if not bundle.examples.num_rows:
        raise InvalidInputError(
            f"The dataset {dataset.run_name!r} yielded no examples; nothing was loaded.",
            path=next(iter(prints), None),
        )
    if entry is not None or others:
        report.notes.extend(_forget(store, dataset.run_name, bundle))
    tables = bundle.with_example_meta(source_sha256=digest(prints)).tables()
    for table, rows in tables.items():
        store.append_table(table, rows)
    for table in tables:
        store.compact(table)
    store.update_manifest(
        forget_datasets=others,
        datasets={
            dataset.key: {
                "name": dataset.run_name,
                "spec": dataset.spec,
                "fingerprint": prints,
                "examples": bundle.examples.num_rows,
                "responses": bundle.responses.num_rows,
                "labels": bundle.labels.num_rows,
                "scores": bundle.scores.num_rows,
                "notes": bundle.notes,
            }
        },
        notes=report.notes,
    )
    report.computed[dataset.key] = bundle.responses.num_rows
    return report


def _example_content(question: str, context: str, references: Sequence[str]) -> tuple[Any, ...]:
    """What of an example its responses' labels and scores read, comparable with ``==``."""
    return (question, context, tuple(references))


def _forget(store: RunStore, name: str, bundle: TableBundle) -> list[str]:
    """Remove a dataset's stored records before it is loaded again; return what was done.

    Labels and scores of responses whose text or example changed (or that are
    gone) are dropped; those of unchanged responses are kept, except what the
    dataset itself shipped (human labels, recorded scores), which the reload
    brings back.
    """
    old_examples = {e.example_id: e for e in store.read(Example) if e.dataset == name}
    old = [r for r in store.read(Response) if r.example_id in old_examples]
    examples = bundle.examples.select(["example_id", "question", "context", "references"])
    new_examples = {
        row["example_id"]: _example_content(row["question"], row["context"], row["references"])
        for row in examples.to_pylist()
    }
    responses = bundle.responses.select(["response_id", "text", "example_id"]).to_pydict()
    new = {
        r: (t, e)
        for r, t, e in zip(
            responses["response_id"], responses["text"], responses["example_id"], strict=True
        )
    }
    kept: set[str] = set()
    for r in old:
        n = new.get(r.response_id)
        was = old_examples[r.example_id]
        if (
            n is not None
            and n == (r.text, r.example_id)
            and n[1] in new_examples
            and new_examples[n[1]] == _example_content(was.question, was.context, was.references)
        ):
            kept.add(r.response_id)
    changed = {r.response_id for r in old} - kept
    all_old = changed | kept

    def stale(column: str) -> Callable[[pd.DataFrame], pd.Series]:
        """Rows of changed responses, and the dataset's own rows of every old response."""
        return lambda df: (
            df["response_id"].isin(changed)
            | (df["response_id"].isin(all_old) & df[column].map(is_stored))
        )

    store.drop("labels", stale("labeler"))
    store.drop("scores", stale("detector"))
    store.drop("responses", lambda df: df["response_id"].isin(all_old))
    store.drop("examples", lambda df: df["example_id"].isin(set(old_examples)))
    return [
        f"Dataset {name!r} replaced: {len(kept)} responses unchanged kept their labels and "
        f"scores; {len(changed)} changed or removed lost theirs (recomputed by the next "
        "label and detect stages)."
    ]
