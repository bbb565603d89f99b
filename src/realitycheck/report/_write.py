"""Write a run's report: one HTML file, a Markdown file with its figures, and CSV tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from realitycheck.params import (
    InstanceOf,
    NonEmptyStr,
    OrNone,
    PathLike,
    check_arg,
    param_error,
)
from realitycheck.pipeline import check_keys
from realitycheck.records.keys import HUMAN
from realitycheck.report._cells import with_base_rate
from realitycheck.report._data import coverage, human_keys, load, overview
from realitycheck.report._document import Block, Figure
from realitycheck.report._findings import findings_section
from realitycheck.report._html import render_html
from realitycheck.report._leaderboard import render_leaderboard
from realitycheck.report._markdown import render_markdown
from realitycheck.report._results import agreement_section, curves_section, metrics_section
from realitycheck.report._sections import (
    header_section,
    notes_section,
    overview_section,
    title_section,
)
from realitycheck.report._studies import studies_section, study_frame
from realitycheck.store import RunStore, folder_name, load_results, write_atomically
from realitycheck.text import csv_safe_frame

__all__ = ["ReportFiles", "write_report"]

FIGURE_DIR = "figures"


@dataclass(frozen=True, kw_only=True)
class ReportFiles:
    """The files :func:`write_report` wrote.

    Attributes:
        html: The self-contained HTML report.
        leaderboard: The standalone leaderboard page, beside the report.
        markdown: The Markdown report.
        tables: The CSV tables (metrics, agreement, overview, thresholds, coverage).
        figures: The PNG figures the Markdown links to.
    """

    html: Path
    leaderboard: Path
    markdown: Path
    tables: tuple[Path, ...]
    figures: tuple[Path, ...]


def _csv(path: Path, df: pd.DataFrame) -> Path:
    """Write a CSV table, formula-leading text cells prefixed (see :func:`csv_safe_frame`)."""
    write_atomically(path, csv_safe_frame(df).to_csv(index=False).encode("utf-8"))
    return path


def _thresholds(metrics: pd.DataFrame) -> pd.DataFrame:
    columns = ["dataset", "detector", "labeler", "threshold", "note"]
    rows = metrics[(metrics["slice"] == "all") & metrics["threshold"].notna()]
    return rows[columns].drop_duplicates(["dataset", "detector", "labeler"]).reset_index(drop=True)


def stored_reference(manifest: Mapping[str, Any]) -> str:
    """The reference the run's evaluate stage used (its manifest), else ``human``."""
    config = manifest.get("config", {})
    evaluate = config.get("evaluate", {}) if isinstance(config, dict) else {}
    reference = evaluate.get("reference") if isinstance(evaluate, dict) else None
    return reference if isinstance(reference, str) and reference else HUMAN


def _check(store: object, out_dir: object, title: object, reference: object) -> Path:
    check_arg(store, InstanceOf(RunStore), name="store", owner="write_report")
    path = Path(check_arg(out_dir, PathLike(), name="out_dir", owner="write_report"))
    check_arg(title, NonEmptyStr(), name="title", owner="write_report")
    check_arg(reference, OrNone(NonEmptyStr()), name="reference", owner="write_report")
    if path.exists() and not path.is_dir():
        raise param_error("out_dir", "write_report", "a folder", got=f"the file {path}")
    return path


def write_report(
    store: RunStore,
    out_dir: str | Path,
    *,
    title: str = "realitycheck report",
    reference: str | None = None,
) -> ReportFiles:
    """Write the report of a run into ``out_dir`` (created if missing).

    The report opens with the key findings (per dataset the best detector
    against the length baseline, each labeler's agreement with the reference,
    the leaderboard's headline inversion, one sentence per study), then a data
    overview (responses, examples and hallucination rates per dataset, task
    and model), detector metrics with confidence intervals, ROC and
    precision-recall curves, labeler agreement, the studies, notes, and last
    the run information (versions, component specs, how thresholds, splits and
    confidence intervals were computed). A table the run does not hold makes
    its part say so instead of failing.

    Files written: ``report.html`` (self-contained: inline CSS and script,
    base64 PNG figures, every text escaped; tables sort and filter offline),
    ``leaderboard.html`` (standalone), ``report.md`` with its figures in
    ``figures/``, and ``metrics.csv``, ``agreement.csv``, ``overview.csv``,
    ``thresholds.csv``, ``coverage.csv`` and the studies' tables (leaderboard
    tables sorted by rank) under ``studies/``. ``metrics.csv``, ``agreement.csv``
    and every study table with a PR-AUC carry a ``base_rate`` column
    (``n_positive / n``, the PR-AUC of a random score; see :func:`with_base_rate`).
    Text cells that start like a spreadsheet formula are prefixed with ``'``. No
    response text is copied.
    The studies are those stored in the run folder; for a run on object
    storage, those stored in ``out_dir/studies/`` (where ``realitycheck study
    --run URI --report-dir DIR`` puts them).

    Args:
        store: The run.
        out_dir: Folder to write into; existing report files are replaced.
        title: Title of the report.
        reference: Labeler whose verdicts are the main ground truth (any label
            key): detectors are ranked by AUROC against it, the curves and
            thresholded tables use it, and tables, captions and legends name it.
            ``None`` = the reference the evaluate stage used (its manifest
            entry), else ``human``.

    Returns:
        The paths written.

    Raises:
        InvalidInputError: A bad argument, ``out_dir`` names a file, or
            ``reference`` names no labeler the run holds labels of (nothing is
            written then).
    """
    out = _check(store, out_dir, title, reference)
    data = load(store)
    if reference is not None:  # before anything is written, as evaluate refuses it
        check_keys(
            labelers=sorted(set(data.labels["labeler"].dropna().astype(str))), reference=reference
        )
    reference = reference or stored_reference(data.manifest)
    keys = human_keys(data, reference)
    view = overview(data, reference)
    cov = coverage(data)
    results = load_results(store, folder=out if store.remote is not None else None)
    blocks: list[Block] = [
        *title_section(data, title),
        *findings_section(data, reference, results, cov),
        *overview_section(data, view, cov, keys),
        *metrics_section(data, reference),
        *curves_section(data, reference),
        *agreement_section(data, reference),
        *studies_section(results),
        *notes_section(data, cov),
        *header_section(data),
    ]
    out.mkdir(parents=True, exist_ok=True)
    figures = [b for b in blocks if isinstance(b, Figure)]
    figure_paths = []
    if figures:
        (out / FIGURE_DIR).mkdir(exist_ok=True)
        for fig in figures:
            path = out / FIGURE_DIR / f"{fig.stem}.png"
            write_atomically(path, fig.png)
            figure_paths.append(path)
    tables: tuple[Path, ...] = (
        _csv(out / "metrics.csv", with_base_rate(data.metrics)),
        _csv(out / "agreement.csv", with_base_rate(data.agreement)),
        _csv(out / "overview.csv", view),
        _csv(out / "thresholds.csv", _thresholds(data.metrics)),
        _csv(out / "coverage.csv", cov),
    )
    for result in results:
        folder = out / "studies" / folder_name(result.study)
        folder.mkdir(parents=True, exist_ok=True)
        tables += tuple(_csv(folder / f"{t.name}.csv", study_frame(t.frame)) for t in result.tables)
    markdown = out / "report.md"
    write_atomically(markdown, render_markdown(blocks, FIGURE_DIR).encode("utf-8"))
    html_path = out / "report.html"
    write_atomically(html_path, render_html(blocks, title, FIGURE_DIR).encode("utf-8"))
    board = out / "leaderboard.html"
    write_atomically(board, render_leaderboard(data, reference, title).encode("utf-8"))
    return ReportFiles(
        html=html_path,
        leaderboard=board,
        markdown=markdown,
        tables=tables,
        figures=tuple(figure_paths),
    )
