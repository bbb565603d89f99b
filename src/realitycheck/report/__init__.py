"""The report of a run: one self-contained HTML file, Markdown with figures, CSV tables.

>>> from realitycheck.report import write_report
>>> files = write_report(RunStore("runs/demo"), "runs/demo/report")  # doctest: +SKIP
>>> files.html  # doctest: +SKIP
PosixPath('runs/demo/report/report.html')
"""

from realitycheck.report._write import ReportFiles, write_report

__all__ = ["ReportFiles", "write_report"]
