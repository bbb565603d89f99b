"""The runner: whole runs from a TOML config, the demo, and the one loop over studies.

It sits above the report, the studies and the pipeline, and below the command
line, which only parses arguments and calls it.
"""

from realitycheck.runner._choice_config import ChoiceSettings
from realitycheck.runner._config import DatasetEntry, RunConfig, load_run_config
from realitycheck.runner._demo import (
    DEMO_DATASETS,
    DEMO_DETECTORS,
    DEMO_LABELERS,
    DEMO_PLAN,
    DemoResult,
    demo_study_keys,
    run_demo,
)
from realitycheck.runner._executor_config import ExecutorSettings
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
from realitycheck.runner._studies import StudyRun, build_studies, expand_study_keys, run_studies

__all__ = [
    "DEMO_DATASETS",
    "DEMO_DETECTORS",
    "DEMO_LABELERS",
    "DEMO_PLAN",
    "ChoiceSettings",
    "DatasetEntry",
    "DemoResult",
    "ExecutorSettings",
    "Listener",
    "RunConfig",
    "RunOutcome",
    "StudyRun",
    "build_studies",
    "choose_datasets",
    "demo_study_keys",
    "expand_study_keys",
    "generate_datasets",
    "load_run_config",
    "make_cache",
    "measure_run",
    "record_models",
    "run_config",
    "run_demo",
    "run_studies",
]
