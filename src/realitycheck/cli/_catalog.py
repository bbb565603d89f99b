"""Verbs that list and describe what is available: datasets and components."""

from __future__ import annotations

import difflib
import json
from typing import Any

import click

from realitycheck.cli._common import cli, datasets_from_keys, progress_for

__all__: list[str] = []

# -- datasets -------------------------------------------------------------------------------


@cli.group("datasets")
def datasets_group() -> None:
    """List, describe and fetch datasets."""


@datasets_group.command("list")
def datasets_list() -> None:
    """List every registered dataset."""
    from realitycheck.datasets import datasets

    for name in datasets.names():
        cls = datasets.get(name)
        click.echo(f"{name:20s} {cls.description or (cls.__doc__ or '').strip().splitlines()[0]}")


@datasets_group.command("describe")
@click.argument("name")
@click.option("--data-dir", type=click.Path(file_okay=False), help="Folder holding the data.")
@click.option("--docs", is_flag=True, help="Print the documentation instead of the counts.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.pass_context
def datasets_describe(
    ctx: click.Context, name: str, data_dir: str | None, docs: bool, as_json: bool
) -> None:
    """Load a dataset and print its counts and label mappings.

    A dataset that cannot be built without parameters (``files``) prints its
    documentation instead: what each parameter means, with examples. NAME may
    be a key with parameters, e.g. 'files[path=my.csv,text=answer]', or a
    dataset spec file (my_data.toml).
    """
    from realitycheck.datasets import datasets, describe
    from realitycheck.datasets.spec_file import is_spec_file
    from realitycheck.registry import parse_key

    base, params = ("files", {"path": name}) if is_spec_file(name) else parse_key(name)
    doc = datasets.describe(base)
    missing = [p.name for p in doc.params if p.required and p.name not in params]
    if docs or missing:
        _echo_docs([doc], as_json)
        if missing and not docs and not as_json:
            click.echo(
                f"\n(Give {', '.join(missing)} to load it and print its counts, e.g. "
                f"'{doc.name}[{missing[0]}=...]'.)"
            )
        return
    summaries = {}
    for ds in datasets_from_keys([name], data_dir):  # a spec file may name several
        with progress_for(ctx).task(f"loading {ds.key}", None) as task:
            bundle = ds.load(progress=task.advance)
        summaries[ds.key] = describe(bundle)
    if as_json:
        shown = next(iter(summaries.values())) if len(summaries) == 1 else summaries
        click.echo(json.dumps(shown, indent=2, sort_keys=True, default=str))
        return
    click.echo("\n".join(_format_summary(key, s) for key, s in summaries.items()))


def _format_summary(key: str, summary: dict[str, Any], indent: int = 0) -> str:
    lines = [f"{key}"] if indent == 0 else []
    pad = "  " * (indent + 1)
    for k, v in summary.items():
        if isinstance(v, dict):
            lines.append(f"{pad}{k}:")
            lines.append(_format_summary(key, v, indent + 1))
        elif isinstance(v, list):
            lines.append(f"{pad}{k}:")
            lines.extend(f"{pad}  - {item}" for item in v)
        else:
            lines.append(f"{pad}{k}: {v}")
    return "\n".join(lines)


@datasets_group.command("fetch")
@click.argument("name")
@click.option(
    "--dest",
    type=click.Path(file_okay=False),
    help="Where to put the files (default: $REALITYCHECK_CACHE_DIR/data, else "
    "~/.cache/realitycheck/data: where datasets are read from).",
)
@click.option("--force", is_flag=True, help="Download again even if present.")
@click.option(
    "--trust-unpinned",
    is_flag=True,
    help="Download a file whose SHA-256 is not pinned yet (HaluEval qa, dialogue, "
    "summarization) and record its digest; later fetches are checked against it.",
)
def datasets_fetch(name: str, dest: str | None, force: bool, trust_unpinned: bool) -> None:
    """Download a dataset from its canonical source and verify its checksums."""
    from realitycheck.datasets import datasets, fetch

    datasets.get(name)
    root = fetch(name, dest=dest, force=force, trust_unpinned=trust_unpinned)
    click.echo(f"{name}: files verified in {root}")


# -- components -----------------------------------------------------------------------------

_FAMILIES = ("datasets", "backends", "labelers", "detectors", "studies")


def _registries() -> list[tuple[str, Any]]:
    from realitycheck.registry import registry_of

    return [(family, registry_of(family)) for family in _FAMILIES]


def _echo_docs(docs: list[Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([d.to_dict() for d in docs], indent=2, default=str))
        return
    click.echo("\n\n".join(d.to_text() for d in docs))


@cli.command("components")
def components() -> None:
    """List every registered dataset, backend, labeler, detector and study."""
    for family, registry in _registries():
        click.echo(f"{family}:")
        for name in registry.names():
            click.echo(f"  {name:22s} {registry.describe(name).summary}")


def _echo_table(name: str, as_json: bool) -> None:
    """Print a run config table's keys (``describe '[bootstrap]'``)."""
    from realitycheck.errors import UnknownComponentError
    from realitycheck.runner import TABLES, describe_table, table_doc

    table = name.strip("[]")
    if table not in TABLES:
        hint = "".join(
            f" Did you mean '[{c}]'?" for c in difflib.get_close_matches(table, TABLES, 1)
        )
        raise UnknownComponentError(
            f"There is no run config table {name!r} of plain settings.{hint} "
            f"Those described here: {', '.join(f'[{t}]' for t in TABLES)}."
        )
    click.echo(json.dumps(table_doc(table), indent=2) if as_json else describe_table(table))


@cli.command("describe")
@click.argument("name")
@click.option(
    "--family", type=click.Choice(_FAMILIES), help="Only this family (a name may be in two)."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def describe_cmd(name: str, family: str | None, as_json: bool) -> None:
    """Print the documentation of a component of any family, without building it.

    NAME is a registered name (``semantic_entropy``, ``label_noise``, ``openai``…)
    or a key (its parameters are ignored). The text gives each parameter's
    type, default, constraint and meaning. A name in two families (``length``
    is a detector and a study) prints both, unless --family picks one. A run
    config table in brackets ('[bootstrap]', '[run]', '[executor]'...) prints its keys.
    """
    from realitycheck.errors import UnknownComponentError
    from realitycheck.registry import parse_key, singular

    if name.startswith("[") and name.endswith("]"):
        _echo_table(name, as_json)
        return

    base, _ = parse_key(name)
    registries = [(f, r) for f, r in _registries() if family in (None, f)]
    docs = [registry.describe(base) for _, registry in registries if base in registry]
    if not docs:
        every = sorted({n for _, registry in registries for n in registry.names()})
        close = difflib.get_close_matches(base.replace("-", "_"), every, n=3, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        where = singular(family) if family else "component"
        raise UnknownComponentError(
            f"There is no {where} named {base!r}.{hint} "
            "List them all with `realitycheck components`."
        )
    _echo_docs(docs, as_json)
