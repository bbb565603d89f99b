"""The runner: whole runs from a TOML config, the demo, and the one loop over studies.

It sits above the report, the studies and the pipeline, and below the command
line, which only parses arguments and calls it. The settings tables of a run
config (:class:`RunSettings`, :class:`ExecutorSettings`, :class:`DetectSettings`)
are light, for the command line to build its options from their fields; the
rest loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from realitycheck.registry import lazy_names
from realitycheck.runner._executor_config import ExecutorSettings
from realitycheck.runner._sections import (
    TABLES,
    DatasetTable,
    DetectSettings,
    RunSettings,
    describe_table,
    table_doc,
)

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from realitycheck.runner._choice_config import ChoiceSettings
    from realitycheck.runner._config import (
        DatasetEntry,
        RunConfig,
        load_run_config,
    )
    from realitycheck.runner._demo import (
        DEMO_DATASETS,
        DEMO_DETECTORS,
        DEMO_LABELERS,
        DEMO_PLAN,
        PRELIMINARY_RESAMPLES,
        DemoResult,
        demo_study_keys,
        run_demo,
    )
    from realitycheck.runner._run import (
        Listener,
        RunOutcome,
        choose_datasets,
        generate_datasets,
        make_cache,
        measure_run,
        record_models,
        run_config,
    )
    from realitycheck.runner._studies import (
        StudyRun,
        build_studies,
        expand_study_keys,
        run_studies,
    )

_LAZY = {
    "ChoiceSettings": "_choice_config",
    "DatasetEntry": "_config",
    "RunConfig": "_config",
    "load_run_config": "_config",
    "DEMO_DATASETS": "_demo",
    "DEMO_DETECTORS": "_demo",
    "DEMO_LABELERS": "_demo",
    "DEMO_PLAN": "_demo",
    "DemoResult": "_demo",
    "demo_study_keys": "_demo",
    "run_demo": "_demo",
    "PRELIMINARY_RESAMPLES": "_demo",
    "Listener": "_run",
    "RunOutcome": "_run",
    "choose_datasets": "_run",
    "generate_datasets": "_run",
    "make_cache": "_run",
    "measure_run": "_run",
    "record_models": "_run",
    "run_config": "_run",
    "StudyRun": "_studies",
    "build_studies": "_studies",
    "expand_study_keys": "_studies",
    "run_studies": "_studies",
}
"""Each name loaded on first use, from its module (the command line's ``--help`` stays cheap)."""

__all__ = [
    "TABLES",
    "DEMO_DATASETS",
    "DEMO_DETECTORS",
    "DEMO_LABELERS",
    "DEMO_PLAN",
    "PRELIMINARY_RESAMPLES",
    "ChoiceSettings",
    "DatasetEntry",
    "DatasetTable",
    "DemoResult",
    "DetectSettings",
    "ExecutorSettings",
    "Listener",
    "RunConfig",
    "RunOutcome",
    "RunSettings",
    "StudyRun",
    "build_studies",
    "choose_datasets",
    "demo_study_keys",
    "describe_table",
    "expand_study_keys",
    "generate_datasets",
    "load_run_config",
    "make_cache",
    "measure_run",
    "record_models",
    "run_config",
    "run_demo",
    "run_studies",
    "table_doc",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
