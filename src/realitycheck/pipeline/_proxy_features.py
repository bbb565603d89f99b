"""White-box features of answers a run did not generate, read through a proxy model.

Perplexity, token entropies, LogDet, eRank and EigenScore read what the
generator measured while it wrote each answer (``response.features``). A
dataset's own answers (TruthfulQA's 22,434 human-judged ones, HaluEval's)
carry none, so those detectors could never be measured against the human
labels. A :class:`ProxyModel` fills the gap: a local white-box model (the
``hf`` backend) reads each response's text, teacher-forced after the prompt
generation would have sent for its example
(:func:`realitycheck.backends.teacher_force`), and what it measures is
stored in the layout the generate stage writes (``{"best": SEQ, "samples":
[SEQ, ...]}``, :func:`realitycheck.pipeline.generate`), marked as a proxy's view
(``features["proxy"]``) and kept apart from the run's responses.

Storage: one table per proxy, ``responses.proxy-<12 hex>`` (a hash of the
backend's key and version and the prompt builder's key), one row per
response with the text it read, its features and, in ``meta``, what it
holds (``hidden_layers``, ``top_logprobs``) or the ``error`` that stopped
it. A rerun reads the stored rows and computes only the responses missing
there, those whose text changed and those a detector needs more of (another
hidden layer); an errored row stands (its scores fail with its error) until
``retry_errors`` measures it again. Rows are appended one part per batch, so
a stopped stage keeps what it measured.

The detectors see the proxy's features through :class:`ProxiedDetector`,
which keeps the detector's key (its values are what the detector computes)
and adds ``proxy`` to its spec: in every score, in the run's manifest
(``components``, and ``config.proxy_features``).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from realitycheck.backends import (
    Generation,
    GenerationRequest,
    teacher_force,
)
from realitycheck.detectors import Detector
from realitycheck.errors import InvalidInputError
from realitycheck.pipeline._proxy_model import (
    ProxiedDetector,
    ProxyModel,
    ProxyView,
    reads_features,
)
from realitycheck.pipeline._report import StageReport, commonest_error
from realitycheck.progress import NullProgress, Progress
from realitycheck.records import Example, Response, records_from_columns
from realitycheck.store import RunStore, from_texts, scalar

__all__ = ["ProxyRead"]

_ROWS_PER_PART = 512
_SEQUENCE_FIELDS = ("tokens", "token_logprobs", "token_entropies", "top_logprobs", "hidden")


def _wanted_layers(proxy: ProxyModel, detectors: Sequence[Detector]) -> tuple[int, ...]:
    """The hidden layers to store: those the detectors name, the proxy's, else the middle one."""
    readers = [d for d in detectors if "hidden" in d.needs]
    if not readers:
        return ()
    named = [getattr(d, "layer", None) for d in readers]
    layers = {int(n) for n in named if n is not None} | set(proxy.hidden_layers)
    if any(n is None for n in named) and not proxy.hidden_layers:
        count = getattr(proxy.backend, "layer_count", None)
        if not callable(count):
            raise InvalidInputError(
                f"The proxy {proxy.backend.key!r} does not say how many layers it has; give "
                "the ProxyModel hidden_layers, or the detectors a layer."
            )
        layers.add(int(count()) // 2)
    return tuple(sorted(layers))


def _covers(meta: Mapping[str, Any], layers: Sequence[int], top_logprobs: int) -> bool:
    """Whether a stored row holds the layers and the alternatives asked for now."""
    held = set(meta.get("hidden_layers") or [])
    return set(layers) <= held and int(meta.get("top_logprobs") or 0) >= top_logprobs


def _sequence(generation: Generation) -> dict[str, Any]:
    """The features of a one-sequence generation, in the generate stage's layout.

    A field the proxy measured is kept even when the answer has no token
    (an empty list), so a detector says "no tokens" rather than "not measured".
    """
    out: dict[str, Any] = {}
    for name in _SEQUENCE_FIELDS:
        values = getattr(generation, name)
        if not values:
            continue
        item = values[0]
        if name == "hidden":
            out[name] = {k: list(v) for k, v in item.items()}
        elif name == "top_logprobs":
            out[name] = [dict(step) for step in item]
        else:
            out[name] = list(item)
    return out


class _Measure:
    """Measures responses with the proxy: one stored row per response."""

    def __init__(
        self, proxy: ProxyModel, examples: Mapping[str, Example], layers: tuple[int, ...]
    ) -> None:
        self.proxy = proxy
        self.examples = examples
        self.layers = layers
        self.marking = {"backend": proxy.backend.key, "prompt": proxy.prompt.key}

    def rows(self, responses: Sequence[Response]) -> list[Response]:
        """Measure ``responses`` (best answer and samples); return their stored rows."""
        requests: list[GenerationRequest] = []
        answers: list[str] = []
        owners: list[int] = []
        errors: dict[int, str] = {}
        for k, response in enumerate(responses):
            try:
                example = self.examples[response.example_id]
                request = self.proxy.prompt(example, response, self.examples)
            except (InvalidInputError, KeyError) as exc:
                errors[k] = f"its prompt cannot be rebuilt: {exc}"
                continue
            request = dataclasses.replace(
                request,
                logprobs=True,
                top_logprobs=self.proxy.top_logprobs,
                hidden_layers=self.layers,
            )
            for text in (response.text, *response.samples):
                requests.append(request)
                answers.append(text)
                owners.append(k)
        measured = teacher_force(self.proxy.backend, requests, answers) if requests else []
        per_response: dict[int, list[Generation]] = {}
        for k, generation in zip(owners, measured, strict=True):
            per_response.setdefault(k, []).append(generation)
        return [
            self._row(response, errors.get(k, ""), per_response.get(k, []))
            for k, response in enumerate(responses)
        ]

    def _row(self, response: Response, error: str, generations: list[Generation]) -> Response:
        failed = [g.error for g in generations if g.error]
        if not error and failed:
            error = failed[0] if len(generations) == 1 else f"{len(failed)} answers: {failed[0]}"
        meta: dict[str, Any] = {"proxy": self.marking}
        features: dict[str, Any] = {}
        if error:
            meta["error"] = error[:1000]
        else:
            meta["hidden_layers"] = list(self.layers)
            meta["top_logprobs"] = self.proxy.top_logprobs
            features = {"best": _sequence(generations[0]), "proxy": self.marking}
            if len(generations) > 1:
                features["samples"] = [_sequence(g) for g in generations[1:]]
        return Response(
            response_id=response.response_id,
            example_id=response.example_id,
            model=str(getattr(self.proxy.backend, "model", "") or self.proxy.backend.key),
            text=response.text,
            prompt_variant=response.prompt_variant,
            decoding="teacher_forced",
            samples=response.samples,
            features=features,
            meta=meta,
        )


def _own_features(responses: pa.Table) -> int:
    """How many responses carry features their generator stored."""
    features = responses.column("features").fill_null(scalar("{}"))
    return int(pc.sum(pc.not_equal(features, scalar("{}"))).as_py() or 0)


class ProxyRead:
    """The proxy model's part in one detect stage: decided before any work, measured once.

    Building it checks the proxy against the detectors that read white-box
    features and decides whether it is used (:attr:`active`); the responses
    are measured on the first call of :meth:`view`, so a stage whose scores
    all stand makes no forward pass.

    Raises:
        InvalidInputError: When the backend cannot supply what the detectors
            read, or when some responses carry their generator's features and
            others do not: scoring both under one key would mix the
            generator's view with the proxy's.
    """

    def __init__(
        self,
        store: RunStore,
        proxy: ProxyModel,
        responses: pa.Table,
        examples: Mapping[str, Example],
        detectors: Sequence[Detector],
        *,
        retry_errors: bool,
        progress: Progress | None,
        report: StageReport,
    ) -> None:
        self.proxy = proxy
        self._store = store
        self._responses = responses
        self._examples = examples
        self._retry_errors = retry_errors
        self._progress = progress or NullProgress()
        self._report = report
        self._view: ProxyView | None = None
        readers = [d for d in detectors if reads_features(d)]
        self.active = bool(readers)
        if not readers:
            report.notes.append(
                f"the proxy {proxy.backend.key} was not used: no detector here reads token "
                "log-probabilities, entropies or hidden states."
            )
            return
        proxy.check(readers)
        own = _own_features(responses)
        if own and own == responses.num_rows:
            self.active = False
            report.notes.append(
                f"the proxy {proxy.backend.key} was not used: every response carries the "
                "features its generator stored, and those are what the detectors read."
            )
            return
        if own:
            raise InvalidInputError(
                f"{own} of the {responses.num_rows} responses carry the features their "
                f"generator stored and the others none; scoring both with the proxy "
                f"{proxy.backend.key!r} would mix the generator's view with the proxy's under "
                "one detector key. Score them in separate runs (or pick the datasets with "
                "--dataset)."
            )
        self._layers = _wanted_layers(proxy, readers)

    def wrap(self, det: Detector) -> ProxiedDetector:
        """Return ``det`` scoring through the proxy's features."""
        return ProxiedDetector(detector=det, proxy=self.proxy.spec)

    def _from_store(
        self, ids: list[str]
    ) -> tuple[list[str], dict[str, str], list[int], tuple[int, ...]]:
        """Read the stored rows: the features of each response, failures, what to measure.

        A row is measured again when it is missing, its text or samples
        changed, it lacks a hidden layer asked for now, or it failed and
        ``retry_errors`` is set; the layers it held are measured again with
        the new ones (returned last), so a row only ever gains layers.
        """
        responses, layers = self._responses, set(self._layers)
        texts = responses.column("text").to_pylist()
        samples = [tuple(s or ()) for s in responses.column("samples").to_pylist()]
        stored = _stored_rows(self._store, self.proxy.table)
        features: list[str] = ["{}"] * len(ids)
        failures: dict[str, str] = {}
        todo: list[int] = []
        held: set[int] = set()
        for i, rid in enumerate(ids):
            row = stored.get(rid)
            if row is None or row[0] != texts[i] or row[1] != samples[i]:
                todo.append(i)
            elif row[3].get("error"):
                if self._retry_errors:
                    todo.append(i)
                else:
                    failures[rid] = str(row[3]["error"])
            elif _covers(row[3], self._layers, self.proxy.top_logprobs):
                features[i] = row[2]
            else:
                todo.append(i)
                held.update(int(n) for n in row[3].get("hidden_layers") or [])
        return features, failures, todo, tuple(sorted(layers | held))

    def view(self) -> ProxyView:
        """Return the responses with the proxy's features, measuring what is not stored (once)."""
        if self._view is None:
            self._view = self._measure()
        return self._view

    def _measure(self) -> ProxyView:
        proxy, store, responses = self.proxy, self._store, self._responses
        ids = responses.column("response_id").to_pylist()
        features, failures, todo, layers = self._from_store(ids)
        started = time.perf_counter()
        n_failed_now = 0
        if todo:
            measure = _Measure(proxy, self._examples, layers)
            keep = ["response_id", "example_id", "model", "text", "prompt_variant", "samples"]
            keep.append("meta")
            build = getattr(self._examples, "build", None)
            described = f"proxy features {proxy.backend.key}"
            with self._progress.task(described, len(todo)) as task:
                for start in range(0, len(todo), _ROWS_PER_PART):
                    chunk = todo[start : start + _ROWS_PER_PART]
                    part = responses.select(keep).take(pa.array(chunk, pa.int64()))
                    columns = {n: part.column(n).to_pylist() for n in part.column_names}
                    if build is not None:
                        build(columns["example_id"])
                    made = measure.rows(records_from_columns(Response, columns))
                    store.append(made, table=proxy.table)
                    for i, one in zip(chunk, made, strict=True):
                        if one.meta.get("error"):
                            failures[ids[i]] = str(one.meta["error"])
                            n_failed_now += 1
                        else:
                            features[i] = json.dumps(one.features, sort_keys=True, default=str)
                    task.advance(len(chunk))
            store.compact(proxy.table)
        seconds = time.perf_counter() - started
        _record(store, proxy, len(ids), len(todo), len(failures), layers)
        self._report.notes.append(
            _summary(proxy, len(todo), len(ids) - len(todo), n_failed_now, failures, seconds)
        )
        column = responses.schema.get_field_index("features")
        view = responses.set_column(column, "features", from_texts(features))
        return ProxyView(responses=view, failures=failures, proxy=proxy.spec)


def _stored_rows(
    store: RunStore, table: str
) -> dict[str, tuple[str, tuple[str, ...], str, dict[str, Any]]]:
    """The proxy's stored rows by response id: (text, samples, features JSON, meta)."""
    rows = store.arrow(table, columns=["text", "samples", "features", "meta"])
    out = {}
    for rid, text, samples, features, meta in zip(
        rows.column("response_id").to_pylist(),
        rows.column("text").to_pylist(),
        rows.column("samples").to_pylist(),
        rows.column("features").to_pylist(),
        rows.column("meta").to_pylist(),
        strict=True,
    ):
        parsed = json.loads(meta) if meta else {}
        out[rid] = (text, tuple(samples or ()), features or "{}", parsed)
    return out


def _record(
    store: RunStore,
    proxy: ProxyModel,
    n: int,
    computed: int,
    failed: int,
    layers: tuple[int, ...],
) -> None:
    """Write the proxy's entry in the manifest (``config.proxy_features[<table>]``)."""
    entries = dict((store.read_manifest().get("config") or {}).get("proxy_features") or {})
    entries[proxy.table] = {
        **proxy.spec,
        "responses": n,
        "computed_last": computed,
        "failed": failed,
        "hidden_layers": list(layers),
        "top_logprobs": proxy.top_logprobs,
    }
    store.update_manifest(config={"proxy_features": entries})


def _summary(
    proxy: ProxyModel,
    computed: int,
    reused: int,
    failed_now: int,
    failures: Mapping[str, str],
    seconds: float,
) -> str:
    """One sentence on what the proxy measured (shown with the stage's notes)."""
    text = (
        f"proxy features ({proxy.backend.key}, teacher-forced, stored in {proxy.table}): "
        f"{computed} responses measured in {seconds:.1f} s, {reused} already stored"
    )
    if failures:
        counts: dict[str, int] = {}
        for error in failures.values():
            counts[error] = counts.get(error, 0) + 1
        commonest = commonest_error(counts)
        text += (
            f"; {len(failures)} could not be measured ({failed_now} now), their scores fail"
            f" (commonest: {commonest[1]} x {commonest[0]})"
            if commonest
            else ""
        )
    return text + "."
