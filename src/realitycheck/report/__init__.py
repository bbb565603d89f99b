"""The report of a run: one self-contained HTML file, Markdown with figures, CSV tables.

:func:`with_base_rate` adds the ``base_rate`` column (``n_positive / n``, the
PR-AUC of a random score) to a metric table; whoever writes ``metrics.csv``
writes it through this.

>>> from realitycheck.report import write_report
>>> files = write_report(RunStore("runs/demo"), "runs/demo/report")  # doctest: +SKIP
>>> files.html  # doctest: +SKIP
PosixPath('runs/demo/report/report.html')
"""

from realitycheck.report._cells import with_base_rate
from realitycheck.report._write import ReportFiles, write_report

__all__ = ["ReportFiles", "with_base_rate", "write_report"]
