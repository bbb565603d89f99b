"""The study protocol: a diagnostic over a whole run, returning tables, figures and a finding.

A study reads a run through :class:`RunData` (the run's tables loaded once),
and returns a :class:`StudyResult`: named tables (DataFrames, also written as
CSV), PNG figures, a short plain-language finding, and one line per dataset it
could not run on and why (no annotators, no context…). A study never prints
and never fails a run because a dataset lacks what it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from realitycheck.registry import Component, Registry
from realitycheck.store import RunData

__all__ = [
    "RunData",
    "Study",
    "StudyFigure",
    "StudyResult",
    "StudyTable",
    "study",
    "studies",
]


@dataclass(frozen=True)
class StudyTable:
    """One table of a study: a stable file-safe ``name``, the frame and a caption."""

    name: str
    frame: pd.DataFrame
    caption: str = ""


@dataclass(frozen=True)
class StudyFigure:
    """One figure of a study: a stable file-safe ``stem``, PNG bytes and a caption."""

    stem: str
    png: bytes
    caption: str = ""


@dataclass(frozen=True, kw_only=True)
class StudyResult:
    """What a study found.

    Attributes:
        study: Key of the study that produced it.
        spec: The study's spec (name, params, version).
        finding: A few plain-language sentences stating what the numbers show.
        tables: The tables, in reading order.
        figures: The figures, in reading order.
        skipped: One line per dataset (or part) the study could not run on, and why.
    """

    study: str
    spec: dict[str, object]
    finding: str
    tables: tuple[StudyTable, ...] = ()
    figures: tuple[StudyFigure, ...] = ()
    skipped: tuple[str, ...] = ()

    def table(self, name: str) -> pd.DataFrame:
        """Return the table called ``name``."""
        for t in self.tables:
            if t.name == name:
                return t.frame
        raise KeyError(
            f"{self.study} has no table {name!r}; it has {[t.name for t in self.tables]}"
        )


@dataclass(frozen=True, kw_only=True)
class Study(Component):
    """A diagnostic over a run. Subclasses implement :meth:`run`.

    Args:
        reference: The labeler taken as ground truth (default: human labels).
    """

    reference: str = "human"
    needs: ClassVar[frozenset[str]] = frozenset()
    title: ClassVar[str] = ""

    def run(self, data: RunData) -> StudyResult:
        """Run the study over the whole run."""
        raise NotImplementedError

    def _result(
        self,
        finding: str,
        *,
        tables: list[StudyTable] | tuple[StudyTable, ...] = (),
        figures: list[StudyFigure] | tuple[StudyFigure, ...] = (),
        skipped: list[str] | tuple[str, ...] = (),
    ) -> StudyResult:
        return StudyResult(
            study=self.key,
            spec=self.spec,
            finding=finding,
            tables=tuple(tables),
            figures=tuple(figures),
            skipped=tuple(skipped),
        )


studies: Registry[Study] = Registry("studies", "realitycheck.studies")
study = studies.register
