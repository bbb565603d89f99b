"""One verb per stage: datasets, label, detect, evaluate, report, demo.

Every failure the user can fix ends in a one-paragraph message on stderr and a
non-zero exit, never a traceback. An interrupted stage keeps what it stored;
running the same command again resumes.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from realitycheck.errors import InvalidInputError, RealityCheckError

__all__ = ["cli", "main"]

EXIT_ERROR = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130


def split_keys(values: Sequence[str]) -> list[str]:
    """Split repeated/comma-separated component keys, keeping commas inside ``[...]``."""
    out: list[str] = []
    for value in values:
        depth, current = 0, ""
        for ch in value:
            depth += ch == "["
            depth -= ch == "]"
            if ch == "," and depth == 0:
                if current.strip():
                    out.append(current.strip())
                current = ""
            else:
                current += ch
        if current.strip():
            out.append(current.strip())
    return out


def _progress(ctx: click.Context) -> Any:
    from realitycheck.cli._progress import RichProgress

    return RichProgress(quiet=ctx.obj.get("quiet", False))


def _datasets(keys: Sequence[str], data_dir: str | None) -> list[Any]:
    from realitycheck.datasets import datasets

    out = []
    for key in split_keys(keys):
        ds = datasets.create_from_key(key)
        if data_dir is not None:
            ds = type(ds)(**{**ds.params(), "data_dir": data_dir})
        out.append(ds)
    return out


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="realitycheck")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@click.pass_context
def cli(ctx: click.Context, quiet: bool) -> None:
    """Trustworthy evaluation of LLM hallucination detectors, labelers and judges."""
    ctx.ensure_object(dict)
    ctx.obj["quiet"] = quiet


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

    (ds,) = _datasets([name], data_dir)
    with _progress(ctx).task(f"loading {ds.key}", None) as task:
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
    """List every registered labeler and detector with its summary line."""
    from realitycheck.detectors import detectors
    from realitycheck.labelers import labelers

    for family, registry in (("labelers", labelers), ("detectors", detectors)):
        click.echo(f"{family}:")
        for name in registry.names():
            doc = (registry.get(name).__doc__ or "").strip().splitlines()[0]
            click.echo(f"  {name:22s} {doc}")


# -- stages ---------------------------------------------------------------------------------

_dataset_option = click.option(
    "--dataset",
    "-d",
    "dataset_keys",
    multiple=True,
    required=True,
    help="Dataset key, e.g. ragtruth or 'faithbench[protocol=worst]' (repeatable).",
)
_data_dir_option = click.option(
    "--data-dir", type=click.Path(file_okay=False), help="Folder holding the dataset files."
)
_run_option = click.option(
    "--out",
    "--run",
    "run_dir",
    type=click.Path(file_okay=False),
    required=True,
    help="The run folder (created if missing; reused and resumed if present).",
)


def _load_run(
    ctx: click.Context, run_dir: str, dataset_keys: Sequence[str], data_dir: str | None
) -> Any:
    from realitycheck.pipeline import ingest
    from realitycheck.store import RunStore

    store = RunStore(run_dir)
    names = []
    for ds in _datasets(dataset_keys, data_dir):
        ingest(store, ds, progress=_progress(ctx))
        names.append(ds.name)
    return store, names


@cli.command("label")
@_dataset_option
@_data_dir_option
@click.option("--labelers", "-l", multiple=True, required=True, help="Labeler keys (comma list).")
@_run_option
@click.pass_context
def label_cmd(
    ctx: click.Context,
    dataset_keys: tuple[str, ...],
    data_dir: str | None,
    labelers: tuple[str, ...],
    run_dir: str,
) -> None:
    """Label a dataset's responses with correctness labelers."""
    from realitycheck.labelers import labelers as registry
    from realitycheck.pipeline import label

    comps = [registry.create_from_key(k) for k in split_keys(labelers)]
    store, names = _load_run(ctx, run_dir, dataset_keys, data_dir)
    report = label(store, comps, datasets=names, progress=_progress(ctx))
    _echo_stage(report)


@cli.command("detect")
@_dataset_option
@_data_dir_option
@click.option("--detectors", "-D", multiple=True, required=True, help="Detector keys (comma list).")
@_run_option
@click.pass_context
def detect_cmd(
    ctx: click.Context,
    dataset_keys: tuple[str, ...],
    data_dir: str | None,
    detectors: tuple[str, ...],
    run_dir: str,
) -> None:
    """Score a dataset's responses with hallucination detectors."""
    from realitycheck.detectors import detectors as registry
    from realitycheck.pipeline import detect

    comps = [registry.create_from_key(k) for k in split_keys(detectors)]
    store, names = _load_run(ctx, run_dir, dataset_keys, data_dir)
    report = detect(store, comps, datasets=names, progress=_progress(ctx))
    _echo_stage(report)


def _echo_stage(report: Any) -> None:
    for key, n in report.computed.items():
        click.echo(f"{key}: {n} computed, {report.reused.get(key, 0)} already stored")
    for key, why in report.skipped.items():
        click.echo(f"{key}: skipped {why}", err=True)


@cli.command("evaluate")
@_dataset_option
@_data_dir_option
@click.option(
    "--labelers", "-l", multiple=True, help="Labeler keys to run and compare with humans."
)
@click.option("--detectors", "-D", multiple=True, help="Detector keys to run and measure.")
@click.option(
    "--references",
    "-r",
    multiple=True,
    help="Ground-truth labelers for detectors (default: human + every labeler).",
)
@click.option(
    "--n-resamples", type=int, default=1000, show_default=True, help="Bootstrap resamples."
)
@click.option("--confidence", type=float, default=0.95, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--threshold-objective",
    default="f1_macro",
    show_default=True,
    help="What the calibration-split threshold maximises.",
)
@click.option(
    "--threshold",
    "thresholds",
    multiple=True,
    help="Fixed threshold for a detector, KEY=VALUE (repeatable); others are chosen "
    "on the calibration split.",
)
@click.option(
    "--report/--no-report",
    default=True,
    show_default=True,
    help="Also write report.html / report.md / CSV tables into the run folder.",
)
@_run_option
@click.pass_context
def evaluate_cmd(
    ctx: click.Context,
    dataset_keys: tuple[str, ...],
    data_dir: str | None,
    labelers: tuple[str, ...],
    detectors: tuple[str, ...],
    references: tuple[str, ...],
    n_resamples: int,
    confidence: float,
    seed: int,
    threshold_objective: str,
    thresholds: tuple[str, ...],
    report: bool,
    run_dir: str,
) -> None:
    """Label, detect and measure detectors and labelers against human labels."""
    from realitycheck.detectors import detectors as det_registry
    from realitycheck.labelers import labelers as lab_registry
    from realitycheck.pipeline import EvaluationConfig, detect, evaluate, label

    lab_keys, det_keys = split_keys(labelers), split_keys(detectors)
    labs = [lab_registry.create_from_key(k) for k in lab_keys if not k.startswith("human")]
    dets = [det_registry.create_from_key(k) for k in det_keys if not k.startswith("recorded")]
    config = EvaluationConfig(
        detectors=tuple(_stored_keys(det_keys, dets, "recorded")) if det_keys else None,
        labelers=tuple(_stored_keys(lab_keys, labs, "human")) if lab_keys else None,
        references=tuple(split_keys(references)) or None,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        threshold_objective=threshold_objective,
        thresholds=_parse_thresholds(thresholds),
    )
    store, names = _load_run(ctx, run_dir, dataset_keys, data_dir)
    progress = _progress(ctx)
    _echo_stage(label(store, labs, datasets=names, progress=progress))
    _echo_stage(detect(store, dets, datasets=names, progress=progress))
    result = evaluate(store, config, progress=progress)
    out = Path(run_dir)
    result.metrics.to_csv(out / "metrics.csv", index=False)
    result.agreement.to_csv(out / "agreement.csv", index=False)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    if report:
        _write_report(store, out)
    click.echo(f"metrics: {out / 'metrics.csv'} ({len(result.metrics)} rows)")


def _parse_thresholds(values: Sequence[str]) -> dict[str, float]:
    out = {}
    for value in values:
        key, sep, number = value.rpartition("=")
        try:
            out[key.strip()] = float(number)
        except ValueError:
            key = ""
        if not sep or not key.strip():
            raise InvalidInputError(
                f"A --threshold must be written KEY=NUMBER, e.g. length=120. Got {value!r} instead."
            )
    return out


def _stored_keys(keys: Sequence[str], comps: Sequence[Any], stored: str) -> list[str]:
    """Return the keys to measure: built components' keys plus stored ones (``recorded``…)."""
    return [c.key for c in comps] + [k for k in keys if k.startswith(stored)]


def _write_report(store: Any, out: Path) -> None:
    from realitycheck.report import write_report

    files = write_report(store, out)
    click.echo(f"report: {files.html}")


@cli.command("report")
@click.option("--run", "run_dir", type=click.Path(file_okay=False, exists=True), required=True)
@click.option("--out", type=click.Path(file_okay=False), help="Where to write (default: the run).")
def report_cmd(run_dir: str, out: str | None) -> None:
    """Write report.html, report.md and CSV tables for an evaluated run."""
    from realitycheck.store import RunStore

    _write_report(RunStore(run_dir), Path(out or run_dir))


@cli.command("demo")
@click.option("--out", type=click.Path(file_okay=False), default="demo-report", show_default=True)
@_data_dir_option
@click.option("--n-resamples", type=int, default=1000, show_default=True)
@click.pass_context
def demo_cmd(ctx: click.Context, out: str, data_dir: str | None, n_resamples: int) -> None:
    """Run the cheap detectors and labelers on RAGTruth, FaithBench, HaluEval and TruthfulQA."""
    from realitycheck.pipeline import run_demo
    from realitycheck.store import RunStore

    result = run_demo(out, data_dir=data_dir, n_resamples=n_resamples, progress=_progress(ctx))
    result.evaluation.metrics.to_csv(Path(out) / "metrics.csv", index=False)
    _write_report(RunStore(result.run_dir), Path(out))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; turn expected errors into a message and an exit code."""
    try:
        cli.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("interrupted; everything stored so far is kept, rerun to resume", err=True)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        click.echo("interrupted; everything stored so far is kept, rerun to resume", err=True)
        return EXIT_INTERRUPTED
    except click.exceptions.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except RealityCheckError as exc:
        click.echo(f"error: {exc}", err=True)
        return EXIT_ERROR
    except OSError as exc:
        click.echo(f"error: {exc}", err=True)
        return EXIT_ERROR
    except Exception as exc:
        if os.environ.get("REALITYCHECK_DEBUG"):
            raise
        click.echo(
            f"internal error: {type(exc).__name__}: {exc}. Everything stored so far is kept. "
            "Set REALITYCHECK_DEBUG=1 to see the traceback, and please report it.",
            err=True,
        )
        return EXIT_INTERNAL
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
