"""The demo: cheap detectors, lexical/embedding labelers and every study on real data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from realitycheck.analysis import Bootstrap
from realitycheck.datasets import datasets
from realitycheck.detectors import detectors
from realitycheck.encoders import embeddings
from realitycheck.labelers import labelers
from realitycheck.pipeline import (
    Evaluation,
    EvaluationConfig,
    StageReport,
    detect,
    evaluate,
    ingest,
    label,
)
from realitycheck.progress import NullProgress, Progress, scoped
from realitycheck.runner._headlines import headline_findings
from realitycheck.runner._studies import ALL, StudyRun, expand_study_keys, run_studies
from realitycheck.store import RunStore
from realitycheck.studies import studies

__all__ = [
    "DEMO_DATASETS",
    "DEMO_DETECTORS",
    "DEMO_LABELERS",
    "DemoResult",
    "demo_study_keys",
    "run_demo",
]

_LENGTHS = ("length[unit=chars]", "length", "length[unit=tokens]")
_GROUNDING = ("source_overlap", "novel_numbers")
# No embedding_similarity: MiniLM on TruthfulQA's 22,434 answers was 50 of a first run's
# 227 s on two idle cores (the embedding detector on FaithBench still shows MiniLM at work).
_REFERENCE_LABELERS = ("rouge_l", "bleu", "token_f1", "exact_match")

DEMO_PLAN: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # dataset: (labelers, detectors). Labelers and detectors also run only where a
    # response has what they need (references, context).
    # RAGTruth's long sources made embedding_grounding most of a first run's embedding
    # (about 216 CPU s); FaithBench shows that detector at a fraction of the cost.
    "ragtruth": (("knowledge_f1",), (*_LENGTHS, *_GROUNDING)),
    "faithbench": (("knowledge_f1",), (*_LENGTHS, *_GROUNDING, "embedding_grounding")),
    "halueval_general": ((), _LENGTHS),
    "truthfulqa": (_REFERENCE_LABELERS, _LENGTHS),
    # BEGIN's 4,836 dialogue turns: the embedding detector is left out to keep the demo short.
    "begin": (("knowledge_f1",), (*_LENGTHS, *_GROUNDING)),
    "faithdial": (("knowledge_f1",), (*_LENGTHS, *_GROUNDING)),
}
DEMO_DATASETS = tuple(DEMO_PLAN)
EMBEDDING_COMPONENTS = frozenset({"embedding_grounding", "embedding_similarity"})
"""The demo's components that embed texts with MiniLM. They run after every other
stage and a first evaluation (the first findings), since on a first run, before
the embedding cache is filled, they take most of the demo's time."""
DEMO_LABELERS = tuple(dict.fromkeys(k for labs, _ in DEMO_PLAN.values() for k in labs))
DEMO_DETECTORS = tuple(dict.fromkeys(k for _, dets in DEMO_PLAN.values() for k in dets))

TRAIN_NOISE_DATASETS = ("faithbench", "ragtruth", "halueval_general")
"""Where the demo trains its probes (issue 11's datasets): MiniLM embeddings of
TruthfulQA's 22k answers or BEGIN's 4.8k turns would double the demo's time."""


def _train_noise_key() -> str:
    """The demo's train_noise: a probe on the cheap detectors' scores.

    It is trained on the calibration split of :data:`TRAIN_NOISE_DATASETS`
    with the human labels and with each noisy version (15% random flips,
    dissenting label and worker where there are raters, weak supervision by
    ``knowledge_f1`` or ``rouge_l`` where a dataset has them), and measured on
    the human test labels. The study's default MiniLM embedding probe is left
    out: on a first run it embedded every source and response of the three
    datasets (about 373 CPU seconds, most of the demo's studies), and its
    AUROC on FaithBench was near chance. ``realitycheck study train_noise``
    runs it.
    """
    # Patterns matching exactly DEMO_DETECTORS (not FaithBench's recorded scores), kept short
    # because the key names the probe in the report.
    scores = (
        'probe[embedding=false,scores="length*"+source_overlap+novel_numbers+embedding_grounding]'
    )
    component = studies.create(
        "train_noise",
        detectors=(scores,),
        datasets=TRAIN_NOISE_DATASETS,
        weak_labelers=("knowledge_f1", "rouge_l"),
    )
    return component.key


LABEL_NOISE_REPETITIONS = 2
"""Random-flip draws per noise rate in the demo's label_noise (the study's default is 5):
its AUROC-vs-rate curves were most of the demo's study time; the 15% point of
paper 002 and the human-noise sets are as the study makes them."""

PRELIMINARY_RESAMPLES = 200
"""Bootstrap resamples of the demo's first evaluation, whose findings come first
(the final evaluation, whose tables the report shows, uses the run's own)."""


def demo_study_keys() -> list[str]:
    """Every registered study's key as the demo runs it: defaults, but train_ and label_noise's."""
    own = {
        "train_noise": _train_noise_key(),
        "label_noise": studies.create("label_noise", repetitions=LABEL_NOISE_REPETITIONS).key,
    }
    return [own.get(key, key) for key in expand_study_keys([ALL])]


@dataclass(frozen=True, kw_only=True)
class DemoResult:
    """Where the demo wrote its run, what the evaluation found, and the studies it ran.

    ``runs`` holds each study's run, with its error when it failed (the others
    still ran); the command exits non-zero when any did. ``stages`` holds each
    label and detect stage's report (what failed, what was unreadable).
    """

    run_dir: Path
    evaluation: Evaluation
    runs: tuple[StudyRun, ...] = ()
    stages: tuple[StageReport, ...] = ()

    @property
    def studies(self) -> tuple[str, ...]:
        """The keys of the studies it ran, in order."""
        return tuple(run.result.study for run in self.runs)

    @property
    def findings(self) -> tuple[str, ...]:
        """Its two or three headline findings in words, read from the evaluation's tables.

        See :func:`~realitycheck.runner._headlines.headline_findings` (with the
        run, so a difference from length carries its paired interval); they name
        models and datasets (untrusted: escape them before printing).
        """
        return headline_findings(self.evaluation, RunStore(self.run_dir))


def run_demo(
    out: str | Path,
    *,
    data_dir: str | Path | None = None,
    bootstrap: Bootstrap | None = None,
    reference: str | None = None,
    progress: Progress | None = None,
    workers: int | None = 1,
    on_first_findings: Callable[[tuple[str, ...]], None] | None = None,
) -> DemoResult:
    """Load the demo datasets, label, detect, evaluate and run every study into ``out/run``.

    Every study runs with its defaults except train_noise
    (:func:`demo_study_keys`); the manifest's ``config.demo_studies`` records
    the keys that ran.

    ``bootstrap`` sets every interval, of evaluate and of the studies alike.
    ``reference`` is the ground truth of evaluate and of every study (any
    stored label key, e.g. ``recorded:gpt_4o`` on FaithBench; ``None`` = the
    human labels); datasets without such labels have no rows measured
    against it. Re-running reuses every label and score already stored.
    ``workers`` is the number of processes computing studies side by side
    (1, the default = this process; ``None`` = one per usable core, as
    ``realitycheck demo`` does; a script asking for several must guard its
    entry point, see :func:`run_studies`); the stored results are the same
    whatever it is.

    The stages run in two rounds: first every labeler and detector that does
    not embed texts, while a thread loads the embedding model
    (:func:`realitycheck.encoders.embeddings.warm_up`); then, given
    ``on_first_findings``, a quick evaluation
    (:data:`PRELIMINARY_RESAMPLES` resamples) whose headline findings in
    words (untrusted: they name models) go to it (the command prints them
    before a first run's slow part); then the components in
    :data:`EMBEDDING_COMPONENTS`, the evaluation of everything with
    ``bootstrap`` (the tables the report shows) and the studies.
    """
    bootstrap = bootstrap or Bootstrap()
    progress = progress or NullProgress()
    store = RunStore(Path(out) / "run")
    study_keys = demo_study_keys()
    plan = {
        name: {"labelers": list(labs), "detectors": list(dets)}
        for name, (labs, dets) in DEMO_PLAN.items()
    }
    store.update_manifest(config={"demo": plan, "demo_studies": study_keys})
    if any(_embeds(k) for labs, dets in DEMO_PLAN.values() for k in (*labs, *dets)):
        embeddings.warm_up()  # load (on a first run, export) MiniLM beside the cheap stages
    config = EvaluationConfig(bootstrap=bootstrap, reference=reference)
    names = []
    for name in DEMO_PLAN:
        ds = datasets.create(name, data_dir=data_dir) if data_dir else datasets.create(name)
        ingest(store, ds, progress=progress)
        names.append((name, ds.run_name))
    stages = _run_plan(store, names, progress, embedding=False)
    if on_first_findings is not None:
        quick = replace(bootstrap, n_resamples=min(bootstrap.n_resamples, PRELIMINARY_RESAMPLES))
        first = evaluate(store, replace(config, bootstrap=quick), progress=progress)
        on_first_findings(headline_findings(first, store))
    stages += _run_plan(store, names, progress, embedding=True)
    evaluation = evaluate(store, config, progress=progress)
    store.update_manifest(
        notes=[
            f"{run_name}: {key} skipped {why}"
            for run_name, report in stages
            for key, why in report.skipped.items()
        ]
    )
    done = run_studies(
        store,
        study_keys,
        bootstrap=bootstrap,
        reference=reference,
        progress=progress,
        workers=workers,
    )
    return DemoResult(
        run_dir=store.path,
        evaluation=evaluation,
        runs=tuple(done),
        stages=tuple(report for _, report in stages),
    )


def _run_plan(
    store: RunStore,
    names: list[tuple[str, str]],
    progress: Progress,
    *,
    embedding: bool,
) -> list[tuple[str, StageReport]]:
    """Run the plan's labelers and detectors that embed texts (or those that do not).

    Returns each label and detect stage's report with the dataset's run name;
    a dataset with nothing of that kind runs no stage.
    """
    out = []
    for name, run_name in names:
        lab_keys, det_keys = DEMO_PLAN[name]
        labs = [labelers.create_from_key(k) for k in lab_keys if _embeds(k) == embedding]
        dets = [detectors.create_from_key(k) for k in det_keys if _embeds(k) == embedding]
        here = scoped(progress, run_name)  # "labeler rouge_l on ragtruth"
        if labs:
            out.append((run_name, label(store, labs, datasets=[run_name], progress=here)))
        if dets:
            out.append((run_name, detect(store, dets, datasets=[run_name], progress=here)))
    return out


def _embeds(key: str) -> bool:
    """Whether the demo's component ``key`` embeds texts with MiniLM (slow on a first run)."""
    return key.split("[", 1)[0] in EMBEDDING_COMPONENTS
