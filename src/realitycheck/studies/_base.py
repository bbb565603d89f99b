"""The study protocol: a diagnostic over a whole run, returning tables, figures and a finding.

A study reads a run through :class:`RunData` (the run's tables loaded once),
and returns a :class:`StudyResult`: named tables (DataFrames, also written as
CSV), PNG figures, a short plain-language finding, and one line per dataset it
could not run on and why (no annotators, no context…). A study never prints
and never fails a run because a dataset lacks what it needs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from realitycheck.params import NonEmptyStr, param
from realitycheck.registry import Component, Registry

if TYPE_CHECKING:  # pragma: no cover - kept out of the import so the registry loads fast
    from realitycheck.analysis import Bootstrap
    from realitycheck.store import RunData, StudyFigure, StudyResult, StudyTable

__all__ = ["Study", "studies", "study"]


@dataclass(frozen=True, kw_only=True)
class Study(Component):
    """A diagnostic over a run. Subclasses implement :meth:`analyse`.

    Every confidence interval a study reports uses the run's
    :class:`~realitycheck.analysis.Bootstrap`, given to :meth:`run` (its
    resamples, coverage and seed); the result records it. A study's own
    parameters are declared once, at their fields, with
    :func:`realitycheck.params.param`.

    Args:
        reference: The labeler taken as ground truth (default: human labels).
    """

    reference: str = param("human", NonEmptyStr())
    needs: ClassVar[frozenset[str]] = frozenset()
    title: ClassVar[str] = ""

    def run(self, data: RunData, *, bootstrap: Bootstrap | None = None) -> StudyResult:
        """Run the study over the whole run; intervals use ``bootstrap`` (default settings)."""
        from realitycheck.analysis import Bootstrap

        bootstrap = bootstrap or Bootstrap()
        result = self.analyse(data, bootstrap)
        return dataclasses.replace(result, bootstrap=bootstrap.as_dict())

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Compute the study's tables, figures and finding (implemented by each study)."""
        raise NotImplementedError

    def _result(
        self,
        finding: str,
        *,
        tables: list[StudyTable] | tuple[StudyTable, ...] = (),
        figures: list[StudyFigure] | tuple[StudyFigure, ...] = (),
        skipped: list[str] | tuple[str, ...] = (),
    ) -> StudyResult:
        from realitycheck.store import StudyResult

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
