"""What every verb shares: the root group, options, key splitting, progress, run folders."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from realitycheck.cli._fields import field_default, field_option
from realitycheck.cli._terminal import scrub_text, terminal_lines, terminal_text

__all__ = [
    "EXIT_ERROR",
    "EXIT_FAILURES",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "allow_failures_option",
    "backend_from",
    "backend_options",
    "bootstrap_from",
    "bootstrap_options",
    "cache_from",
    "cache_options",
    "check_replace_names",
    "cli",
    "data_dir_option",
    "dataset_option",
    "datasets_from_keys",
    "executor_from",
    "executor_options",
    "local_out",
    "lock_run",
    "models_option",
    "old_out_option",
    "progress_for",
    "reference_option",
    "replace_option",
    "retry_errors_option",
    "run_executor_options",
    "run_option",
    "run_out_folder",
    "scrub_text",
    "split_keys",
    "terminal_lines",
    "terminal_text",
    "workers_option",
]

EXIT_ERROR = 2
"""Bad input: a wrong option, key, file or run folder; nothing was computed."""
EXIT_INTERNAL = 1
EXIT_FAILURES = 3
"""The command ran to its end, but items failed: calls never succeeded (``--allow-failures``)."""
EXIT_INTERRUPTED = 130


def split_keys(values: Sequence[str]) -> list[str]:
    """Split repeated/comma-separated component keys, keeping commas inside ``[...]`` and quotes."""
    from realitycheck.registry import split_keys as split_one

    return [key for value in values for key in split_one(value)]


def dataset_option(help_text: str) -> Any:
    """``--dataset`` / ``-d`` (repeatable, required): the dataset keys, with the verb's help."""
    return click.option(
        "--dataset", "-d", "dataset_keys", multiple=True, required=True, help=help_text
    )


def data_dir_option(help_text: str) -> Any:
    """``--data-dir DIR``: where the dataset files are, with the verb's help."""
    return click.option("--data-dir", type=click.Path(file_okay=False), help=help_text)


def run_option(help_text: str) -> Any:
    """``--out`` / ``--run`` (required): the run folder a verb writes, with the verb's help."""
    return click.option(
        "--out", "--run", "run_dir", type=click.Path(file_okay=False), required=True, help=help_text
    )


def old_out_option(new: str, dest: str, **attrs: Any) -> Any:
    """Still accept ``--out``, this verb's spelling of ``new`` before the rename, with a warning.

    ``--out`` names the run folder (``label``, ``detect``, ``evaluate``…); where
    it named an output folder, that option is now ``new``. The old spelling is
    hidden from ``--help`` and read first: it prints a warning naming ``new``
    and becomes ``new``'s value for this command (so a required ``new`` is
    satisfied, and a default is replaced). Giving both, with different
    values, is refused. ``attrs`` are those of ``new`` that check the value
    (``type``…).
    """
    key = f"realitycheck.old_out.{dest}"

    def take(ctx: click.Context, _: click.Parameter, value: Any) -> None:
        if value is None:
            return
        names: list[str] = []
        at = ctx
        while at.parent is not None:  # the verb, without the program's name
            names.insert(0, at.info_name or "")
            at = at.parent
        verb = " ".join(names)
        click.echo(
            f"warning: {verb} --out is now {new} (--out names the run folder, as in label, "
            "detect and evaluate); the old spelling still works in this release.",
            err=True,
        )
        ctx.default_map = {**(ctx.default_map or {}), dest: value}
        ctx.meta[key] = value

    def add(command: Any) -> Any:
        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            old = ctx.meta.get(key)
            source = ctx.get_parameter_source(dest)
            if old is not None and source is click.core.ParameterSource.COMMANDLINE:
                if kwargs[dest] != old:
                    raise click.UsageError(f"Give {new} only; --out is its old spelling.", ctx)
            return command(*args, **kwargs)

        option = click.option(
            "--out", hidden=True, is_eager=True, expose_value=False, callback=take, **attrs
        )
        return option(run)

    return add


def backend_options(backend_help: str) -> Any:
    """Add ``--backend`` / ``-b`` (the backend key, with the verb's help) and ``--model``."""

    def add(command: Any) -> Any:
        command = click.option(
            "--model", help="The backend's model (overrides model= in --backend)."
        )(command)
        return click.option("--backend", "-b", "backend_key", required=True, help=backend_help)(
            command
        )

    return add


def backend_from(key: str, model: str | None) -> Any:
    """The backend given by :func:`backend_options`; its API key's value is kept out of logs.

    ``model`` (``--model``), when given, replaces the key's ``model=``.
    """
    from realitycheck.backends import backends
    from realitycheck.registry import parse_key
    from realitycheck.store import register_secret_env

    name, params = parse_key(key)
    if model is not None:
        params["model"] = model
    backend = backends.create(name, **params)
    register_secret_env(getattr(backend, "api_key_env", ""))
    return backend


reference_option = click.option(
    "--reference",
    default=None,
    metavar="KEY",
    help="The ground truth: any label key (human, 'human[protocol=worst]', a judge, a "
    "panel, recorded:gpt_4o). Default: the datasets' human labels.",
)

models_option = click.option(
    "--models",
    "models_file",
    type=click.Path(dir_okay=False),
    help="Per-model metadata (family, size in parameters, instruction_tuned, decoding) "
    "from a TOML, YAML or CSV file mapping each model name to its fields; studies group "
    "models by it (models without it are unknown). Replaces the run's earlier metadata.",
)

replace_option = click.option(
    "--replace-dataset",
    "replace",
    multiple=True,
    metavar="NAME",
    help="Reload this dataset although the run holds it with other source files or "
    "settings; labels and scores of changed responses are recomputed (repeatable).",
)

allow_failures_option = click.option(
    "--allow-failures",
    is_flag=True,
    help="Exit 0 although items failed (a call that never succeeded, retryable or fatal), "
    "accepting partial results. Without it such a command exits 3 and prints the commonest "
    "error (2 = bad input). Values a component does not define (no reference) are not failures.",
)

retry_errors_option = click.option(
    "--retry-errors",
    is_flag=True,
    help="Also recompute labels and scores that failed for good (no reference, empty "
    "text); those that failed for a reason that may pass (backend, timeout) are always retried.",
)


def bootstrap_options(command: Any) -> Any:
    """Add ``--n-resamples``, ``--confidence`` and ``--seed`` (the run's Bootstrap) to a verb.

    Their defaults and help are :class:`~realitycheck.analysis.Bootstrap`'s fields
    (the ``[bootstrap]`` table's keys).
    """
    from realitycheck.analysis import Bootstrap

    for name in ("seed", "confidence", "n_resamples"):
        command = field_option(Bootstrap, name, show_default=True)(command)
    return command


def cache_options(command: Any) -> Any:
    """Add ``--cache-dir`` and ``--no-cache`` (the shared call cache of model calls) to a verb.

    They mirror ``[run] cache`` and ``cache_dir`` (:class:`~realitycheck.runner.RunSettings`).
    """
    from realitycheck.runner import RunSettings

    command = field_option(
        RunSettings,
        "cache",
        "--no-cache",
        is_flag=True,
        default=not field_default(RunSettings, "cache"),
        help="Do not read or write the call cache.",
    )(command)
    return field_option(RunSettings, "cache_dir", type=click.Path(file_okay=False))(command)


def cache_from(no_cache: bool, cache_dir: str | None) -> Any:
    """The call cache given by :func:`cache_options` (``None`` with ``--no-cache``).

    The same cache as :func:`realitycheck.runner.make_cache`, built here so that a
    stage verb does not import the runner (and with it the report and pandas).
    """
    if no_cache:
        return None
    from pathlib import Path

    from realitycheck.backends import CallCache
    from realitycheck.errors import InvalidInputError
    from realitycheck.store import is_uri, shown_uri

    if cache_dir is not None and is_uri(cache_dir):
        raise InvalidInputError(
            "The call cache is one SQLite file: --cache-dir must be a local or shared "
            f"folder. Got {shown_uri(cache_dir)}.",
            field="--cache-dir",
        )

    return CallCache(Path(cache_dir) / "calls.sqlite" if cache_dir is not None else None)


def _executor_flags(
    command: Any, *, default: str | None, executor_help: str, address_help: str
) -> Any:
    """Add ``--executor`` and ``--ray-address`` (``[executor]``'s kind and address)."""
    from realitycheck.runner import ExecutorSettings

    command = field_option(
        ExecutorSettings, "address", "--ray-address", metavar="HOST:PORT", help=address_help
    )(command)
    return field_option(
        ExecutorSettings,
        "kind",
        "--executor",
        default=default,
        show_default=default is not None,
        help=executor_help,
    )(command)


def workers_option(help_text: str) -> Any:
    """``--workers N`` (``[executor] workers``: N >= 1, unset = one per usable core)."""
    from realitycheck.runner import ExecutorSettings

    return field_option(ExecutorSettings, "workers", ranged=True, help=help_text)


def executor_options(command: Any) -> Any:
    """Add ``--executor`` and ``--ray-address`` (where the stage's batches run) to a verb."""
    from realitycheck.runner import ExecutorSettings

    return _executor_flags(
        command,
        default=field_default(ExecutorSettings, "kind"),
        executor_help="Where the batches (answers, labels, scores; evaluate's metrics) are "
        "computed: this process, or the workers of a Ray cluster (pip install "
        "'realitycheck[distributed]'; the run folder must be on storage every node sees).",
        address_help="The Ray cluster's head (default: $RAY_ADDRESS; without it, a Ray "
        "started here). Only with --executor ray.",
    )


def run_executor_options(command: Any) -> Any:
    """``--executor`` / ``--ray-address`` of ``run``: unset, the config's [executor] holds."""
    return _executor_flags(
        command,
        default=None,
        executor_help="Where generation, labels, scores and metrics are computed (overrides "
        "the [executor] kind; default: local).",
        address_help="The Ray cluster's head (overrides the [executor] address; default: "
        "$RAY_ADDRESS). Only with the ray executor.",
    )


def executor_from(
    ctx: click.Context, name: str, address: str | None, workers: int | None = None
) -> Any:
    """The executor given by :func:`executor_options`, connected before any work.

    ``workers``: the local executor's threads (evaluate's ``--workers``).
    A Ray connection is closed when the command ends.
    """
    from realitycheck.executors import make_executor

    executor = make_executor(name, address=address, workers=workers)
    ctx.call_on_close(executor.close)
    connect = getattr(executor, "connect", None)
    if connect is not None:
        connect()
    return executor


def bootstrap_from(n_resamples: int, confidence: float, seed: int) -> Any:
    """The Bootstrap settings given by :func:`bootstrap_options`."""
    from realitycheck.analysis import Bootstrap

    return Bootstrap(n_resamples=n_resamples, confidence=confidence, seed=seed)


def progress_for(ctx: click.Context) -> Any:
    """Rich bars on a terminal, plain lines in a log or a pipe; none with ``--quiet``.

    See :func:`realitycheck.cli._progress.progress_for_stderr` (rich is loaded for bars only).
    """
    from realitycheck.cli._progress import progress_for_stderr

    return progress_for_stderr(quiet=ctx.obj.get("quiet", False))


def datasets_from_keys(keys: Sequence[str], data_dir: str | None) -> list[Any]:
    """Build the datasets of ``-d`` values: keys, or spec files (``my_data.toml``)."""
    from realitycheck.datasets import datasets
    from realitycheck.datasets.spec_file import is_spec_file, load_spec

    out = []
    for key in split_keys(keys):
        if is_spec_file(key):
            out.extend(load_spec(key))  # the files it names are its own
            continue
        ds = datasets.create_from_key(key)
        if data_dir is not None:
            ds = type(ds)(**{**ds.params(), "data_dir": data_dir})
        out.append(ds)
    return out


def lock_run(ctx: click.Context, run_dir: Any) -> Any:
    """Hold the run folder's lock until the command ends (a second writer stops, named).

    Returns the run to open the command's ``RunStore`` on (:attr:`RunLock.folder`):
    for a run on object storage, the folder whose bucket the lock has checked,
    so that the store does not check it again.
    """
    import shlex

    from realitycheck.store import RunLock

    argv = (ctx.obj or {}).get("argv") or []
    command = scrub_text("realitycheck " + shlex.join(str(a) for a in argv))
    lock = ctx.with_resource(RunLock(run_dir, command=command))
    if lock.note:
        click.echo(f"note: {lock.note}", err=True)
    return lock.folder


def local_out(run_dir: str, chosen: str | None, option: str = "--report-dir") -> Path:
    """The local folder for CSV tables and the report: ``chosen``, else the run folder.

    A run on object storage has no local folder: ``chosen`` is then required
    (checked before any work). ``option`` names it in the error.
    """
    from realitycheck.errors import InvalidInputError
    from realitycheck.store import is_uri, shown_uri

    if chosen is not None:
        Path(chosen).mkdir(parents=True, exist_ok=True)
        return Path(chosen)
    if is_uri(run_dir):
        raise InvalidInputError(
            f"The run at {shown_uri(run_dir)} is on object storage; the CSV tables and the "
            f"report are written to a local folder: give it with {option} DIR.",
            field=option,
        )
    return Path(run_dir)


def run_out_folder(
    run_dir: str, report_dir: str | None, *, report_dir_on_local_run: bool = True
) -> Path:
    """The local folder where ``report`` or ``study`` writes about an existing run.

    ``report_dir`` (``--report-dir``) when given, else the run folder
    (:func:`local_out`). Checked before any work, in this order: a local run
    must be a folder; with ``report_dir_on_local_run=False`` (``study``, whose
    results belong in RUN/studies/) a local run refuses ``--report-dir``; a run
    on object storage needs ``--report-dir``.

    Raises:
        InvalidInputError: Any of these checks failed (nothing was created).
    """
    from realitycheck.errors import InvalidInputError
    from realitycheck.store import is_uri

    if not is_uri(run_dir) and not Path(run_dir).is_dir():
        raise InvalidInputError(
            f"There is no run folder at {run_dir}.", path=run_dir, field="--run"
        )
    if report_dir is not None and not report_dir_on_local_run and not is_uri(run_dir):
        raise InvalidInputError(
            "--report-dir is for a run on object storage; a run folder keeps its study "
            f"results in {Path(run_dir) / 'studies'} and its report beside them.",
            field="--report-dir",
        )
    return local_out(run_dir, report_dir)


def check_replace_names(replace: Sequence[str], chosen: Sequence[Any]) -> None:
    """Refuse a ``--replace-dataset`` name that none of the chosen datasets has."""
    from realitycheck.errors import InvalidInputError, did_you_mean

    known = sorted({n for ds in chosen for n in (ds.run_name, ds.key, ds.name)})
    for name in replace:
        if name not in known:
            hint = did_you_mean(name, known)
            raise InvalidInputError(
                f"--replace-dataset names a dataset this command does not load: {name!r}.{hint} "
                f"Loaded here: {', '.join(known)}."
            )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="realitycheck")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@click.pass_context
def cli(ctx: click.Context, quiet: bool) -> None:
    """Trustworthy evaluation of LLM hallucination detectors, labelers and judges.

    \b
    Exit codes:
      0  done (items that failed too, with --allow-failures)
      1  internal error (a bug: please report it)
      2  bad input (an option, key, file or run folder), or a study failed
      3  items failed: a call never succeeded (a dead server, a wrong model
         name); everything else is stored and the commonest error is printed
      130  interrupted; everything stored so far is kept
    """  # noqa: D301  (click's \b keeps the table's lines as written)
    ctx.ensure_object(dict)
    ctx.obj["quiet"] = quiet
