"""Diagnostics over a run, one module per study.

Each module registers its study with a decorator; the registry imports the
modules when it is first asked for a name.

A study reads a run (:class:`realitycheck.store.RunData`) and returns a
:class:`realitycheck.store.StudyResult`; results are saved in the run by the store.
"""

from realitycheck.studies._base import Study, studies, study

__all__ = ["Study", "studies", "study"]
