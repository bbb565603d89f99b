"""What TruthfulQA's fine-tuning files mean, shared by its record loop and its Arrow columns.

:mod:`realitycheck.datasets.truthfulqa` reads the files one record at a time;
:mod:`realitycheck.datasets._truthfulqa_columns` reads them as columns. Both
read a completion and name an extra example the same way.
"""

__all__ = ["EXTRA_ID", "VERDICT"]

VERDICT = {"yes": True, "no": False}
"""A fine-tuning file's completion (stripped) as a verdict."""
EXTRA_ID = "truthfulqa/extra/"
"""Prefix of the examples made for answers whose question is not in TruthfulQA.csv."""
