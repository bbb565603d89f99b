"""Verbs that list and describe what is available: datasets and components."""

from __future__ import annotations

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
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.pass_context
def datasets_describe(ctx: click.Context, name: str, data_dir: str | None, as_json: bool) -> None:
    """Load a dataset and print its counts and label mappings."""
    from realitycheck.datasets._describe import describe

    (ds,) = datasets_from_keys([name], data_dir)
    with progress_for(ctx).task(f"loading {ds.key}", None) as task:
        bundle = ds.load(progress=task.advance)
    summary = describe(bundle)
    if as_json:
        click.echo(json.dumps(summary, indent=2, sort_keys=True, default=str))
        return
    click.echo(_format_summary(ds.key, summary))


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
@click.option("--dest", type=click.Path(file_okay=False), help="Where to put the files.")
@click.option("--force", is_flag=True, help="Download again even if present.")
def datasets_fetch(name: str, dest: str | None, force: bool) -> None:
    """Download a dataset from its canonical source and verify its checksums."""
    from realitycheck.datasets import datasets
    from realitycheck.datasets._sources import fetch

    datasets.get(name)
    root = fetch(name, dest=dest, force=force)
    click.echo(f"{name}: files verified in {root}")


# -- components -----------------------------------------------------------------------------


@cli.command("components")
def components() -> None:
    """List every registered labeler, detector and study with its summary line."""
    from realitycheck.detectors import detectors
    from realitycheck.labelers import labelers
    from realitycheck.studies import studies

    registries = (("labelers", labelers), ("detectors", detectors), ("studies", studies))
    for family, registry in registries:
        click.echo(f"{family}:")
        for name in registry.names():
            doc = (registry.get(name).__doc__ or "").strip().splitlines()[0]
            click.echo(f"  {name:22s} {doc}")
