"""RunStore.drop_matching: rows of chosen responses leave a record table, on a folder or S3."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from object_storage import objects

from realitycheck import Example, Label, Response, RunStore, Score
from realitycheck.generation import SamplingPlan
from realitycheck.pipeline import generate


def _labels(store: RunStore) -> None:
    """Twelve labels in a compacted table and two parts (one row replaced in a part)."""
    rows = [
        Label(response_id=f"r{i}", labeler=name, hallucinated=bool(i % 2))
        for i in range(4)
        for name in ("a", "b")
    ]
    store.append(rows[:6])
    store.compact("labels")
    store.append(rows[6:])
    store.append([Label(response_id="r0", labeler="a", hallucinated=True)])
    store.append([Label(response_id="r9", labeler="a", hallucinated=None, error="x")])


@pytest.fixture(params=["folder", "s3"])
def where(request, tmp_path) -> str:
    """The run's location: a folder, or a prefix of a bucket on the moto server."""
    if request.param == "folder":
        return str(tmp_path / "run")
    return request.getfixturevalue("s3_bucket")("run")


@pytest.fixture
def run(where) -> RunStore:
    return RunStore(where)


def _files(where: str) -> list[str]:
    """The run's files, listed directly (not through the store)."""
    if where.startswith("s3://"):
        return sorted(objects(where))
    return sorted(str(p.relative_to(where)) for p in Path(where).rglob("*") if p.is_file())


def _ids(store: RunStore, table: str) -> list[tuple[str, str]]:
    rows = store.arrow(table, columns=[])
    column = "labeler" if table == "labels" else "detector"
    pairs = zip(
        rows.column("response_id").to_pylist(), rows.column(column).to_pylist(), strict=True
    )
    return sorted(pairs, key=str)


@pytest.mark.parametrize(
    "values", [["r0", "r3", "absent"], pa.array(["r0", "r3", "absent"], pa.string())]
)
def test_drop_matching_removes_every_row_of_the_chosen_responses_and_compacts(run, where, values):
    _labels(run)
    assert run.drop_matching("labels", "response_id", values) == 4
    assert _ids(run, "labels") == [
        ("r1", "a"),
        ("r1", "b"),
        ("r2", "a"),
        ("r2", "b"),
        ("r9", "a"),
    ]
    # the newest rows survived: r9's error row from the last part, folded into the table
    assert [r.error for r in run.read(Label) if r.response_id == "r9"] == ["x"]
    assert [f for f in _files(where) if f.startswith("labels")] == ["labels.parquet"]


@pytest.mark.parametrize("values", [[], ["nobody"]])
def test_drop_matching_leaves_the_table_as_it_was_when_nothing_matches(run, where, values):
    _labels(run)
    before, files = run.arrow("labels"), _files(where)
    assert run.drop_matching("labels", "response_id", values) == 0
    assert run.arrow("labels").equals(before)
    assert _files(where) == files and len([f for f in files if "labels.parts" in f]) == 3


def test_drop_matching_on_a_table_the_run_lacks_is_zero(run):
    assert run.drop_matching("scores", "response_id", ["r0"]) == 0
    assert "scores" not in run.tables()


def test_generate_drops_the_records_of_regenerated_responses_on_s3_as_on_a_folder(
    s3_bucket, tmp_path, monkeypatch, fake_openai
):
    from realitycheck.backends.openai import OpenAIBackend
    from realitycheck.detectors import detectors
    from realitycheck.pipeline import detect

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    examples = [
        Example(example_id=f"q/{i}", dataset="q", task="qa", question=f"Q{i}?", references=("a",))
        for i in range(3)
    ]
    kept = Response(response_id="q/0/recorded", example_id="q/0", model="m", text="a")
    outcomes = []
    with fake_openai.FakeOpenAIServer() as server:
        backend = OpenAIBackend(model="tiny", base_url=server.url, backoff=0.01, max_retries=1)
        plan = SamplingPlan(n_samples=0)
        for store in (RunStore(s3_bucket("gen")), RunStore(tmp_path / "gen")):
            server.ignores = {"logprobs"}
            generate(store, examples, backend, plan)
            store.append([kept])
            detect(store, [detectors.create("perplexity")])
            assert all(s.error for s in store.read(Score) if s.response_id != kept.response_id)
            server.ignores = set()
            report = generate(store, examples, backend, plan)
            assert set(store.arrow("scores").column("response_id").to_pylist()) == {
                kept.response_id
            }
            rerun = detect(store, [detectors.create("perplexity")])
            values = {s.response_id: (s.value, s.error) for s in store.read(Score)}
            outcomes.append((report.regenerated, report.dropped_scores, rerun.computed, values))
    remote, local = outcomes
    assert remote == local
    assert remote[:3] == (3, 3, {"perplexity": 3})
    values = remote[3]
    assert values.pop(kept.response_id)[1]  # not regenerated: its stored error stands
    assert all(value is not None and not error for value, error in values.values())
