"""The leaderboard per declared slice (``slice_by=subset``) and pooled, as paper 003 ranks."""

import csv
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from realitycheck import InvalidInputError, RunStore, ingest
from realitycheck.cli import main
from realitycheck.datasets import datasets
from realitycheck.store import RunData
from realitycheck.studies import studies
from realitycheck.studies.leaderboard import Leaderboard

SUBSETS = ("qa", "summary", "data2txt")


def _ragtruth_rows(data_dir: Path) -> list[dict]:
    """RAGTruth's three subsets as one leaderboard file: a row per response, its subset."""
    rows = []
    for subset in SUBSETS:
        lines = (data_dir / "ragtruth" / f"{subset}.jsonl").read_text(encoding="utf-8")
        for line in lines.splitlines():
            source = json.loads(line)
            for response in source["responses"]:
                rows.append(
                    {
                        "source_id": f"{subset}/{source['source_id']}",
                        "subset": subset,
                        "model": response["model"],
                        "response": response["response"],
                        "hallucinated": "yes" if response["labels"] else "no",
                    }
                )
    return rows


def _write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


RAGTRUTH_KEY = (
    "files[path={path},text=response,label=hallucinated,positive=yes,negative=no,"
    "columns=example_id:source_id,meta=subset,name=board]"
)


@pytest.fixture(scope="module")
def ragtruth(tmp_path_factory, data_dir):
    folder = tmp_path_factory.mktemp("ragtruth_board")
    rows = _ragtruth_rows(data_dir)
    path = _write_csv(folder / "board.csv", rows)
    store = RunStore(folder / "run")
    ingest(store, datasets.create_from_key(RAGTRUTH_KEY.format(path=path)))
    result = Leaderboard(slice_by=("subset",)).run(RunData(store))
    return rows, store, result


def test_real_per_subset_and_pooled_rates_equal_the_hand_counted_ones(ragtruth):
    rows, _, result = ragtruth
    assert len(rows) == 817 + 900 + 900
    hallucinated = Counter((r["subset"], r["model"]) for r in rows if r["hallucinated"] == "yes")
    total = Counter((r["subset"], r["model"]) for r in rows)
    assert sum(v for (s, _), v in hallucinated.items() if s == "qa") == 259  # README facts
    assert sum(v for (s, _), v in hallucinated.items() if s == "summary") == 241
    assert sum(v for (s, _), v in hallucinated.items() if s == "data2txt") == 579
    board = result.table("leaderboard").query("judge == 'human'")
    assert sorted(board["slice"].unique()) == [
        "all", "subset=data2txt", "subset=qa", "subset=summary",
    ]  # fmt: skip
    models = sorted({r["model"] for r in rows})
    assert len(models) == 6
    for subset in SUBSETS:
        part = board[board["slice"] == f"subset={subset}"].set_index("generator")
        for model in models:
            n, k = total[(subset, model)], hallucinated[(subset, model)]
            assert (part.loc[model, "n_judged"], part.loc[model, "n_hallucinated"]) == (n, k)
            assert part.loc[model, "hallucination_rate"] == pytest.approx(k / n)
    pooled = board[board["slice"] == "all"].set_index("generator")
    for model in models:
        n = sum(total[(s, model)] for s in SUBSETS)
        k = sum(hallucinated[(s, model)] for s in SUBSETS)
        assert pooled.loc[model, "hallucination_rate"] == pytest.approx(k / n)
    # Pooled over the subsets = the overall rate paper 003 ranks by: gpt-4-0613 first.
    assert pooled["rank"].idxmin() == "gpt-4-0613"
    assert pooled["n_judged"].sum() == 2617 and pooled["n_hallucinated"].sum() == 1079


def test_the_slice_rates_table_sets_the_slices_side_by_side(ragtruth):
    rows, _, result = ragtruth
    wide = result.table("slice_rates")
    assert list(wide.columns) == [
        "dataset", "judge", "judge_kind", "generator", "n_judged",
        "rate:all", "rank:all",
        "rate:subset=data2txt", "rank:subset=data2txt",
        "rate:subset=qa", "rank:subset=qa",
        "rate:subset=summary", "rank:subset=summary",
    ]  # fmt: skip
    assert list(wide["rank:all"]) == sorted(wide["rank:all"])  # lowest pooled rate first
    board = result.table("leaderboard").query("judge == 'human'")
    for _, row in wide.iterrows():
        for name in ("all", "subset=qa", "subset=summary", "subset=data2txt"):
            cell = board.query("slice == @name and generator == @row.generator").iloc[0]
            assert row[f"rate:{name}"] == cell["ranked_rate"]
            assert row[f"rank:{name}"] == cell["rank"]
    qa = wide.set_index("generator")["rate:subset=qa"]
    frame = pd.DataFrame(rows).query("subset == 'qa'")
    expected = frame.assign(h=frame["hallucinated"] == "yes").groupby("model")["h"].mean()
    pd.testing.assert_series_equal(
        qa.sort_index(), expected.sort_index(), check_names=False, check_index_type=False
    )
    assert "the generator human rates lowest per slice: all gpt-4-0613 (11%)" in result.finding
    assert "subset=summary gpt-3.5-turbo-0613 (5%)" in result.finding


# -- a recorded judge, with invalid verdicts, per subset --------------------------------------

BOARD = [
    # (source, subset, model, human, judge verdict)
    ("s1", "qa", "m1", "no", "Consistent"),
    ("s1", "qa", "m2", "yes", "Inconsistent"),
    ("s2", "qa", "m1", "no", "Invalid"),
    ("s2", "qa", "m2", "yes", "Inconsistent"),
    ("s3", "summary", "m1", "yes", "Inconsistent"),
    ("s3", "summary", "m2", "no", "Consistent"),
    ("s4", "summary", "m1", "yes", "Consistent"),
    ("s4", "summary", "m2", "no", "Invalid"),
    ("s5", "summary", "m1", "no", "Consistent"),
    ("s5", "summary", "m2", "no", "Consistent"),
]


def _judged_store(tmp_path: Path, invalid_as: str) -> RunStore:
    rows = [
        {"src": s, "subset": sub, "model": m, "text": f"{s} by {m}", "human": h, "fj": v}
        for s, sub, m, h, v in BOARD
    ]
    path = _write_csv(tmp_path / "board.csv", rows)
    key = (
        f"files[path={path},label=human,positive=yes,negative=no,columns=example_id:src,"
        f"meta=subset,judges=fj,invalid_as={invalid_as},name=board]"
    )
    store = RunStore(tmp_path / f"run_{invalid_as}")
    ingest(store, datasets.create_from_key(key))
    return store


def _rates(result, judge: str) -> dict[tuple[str, str], float]:
    board = result.table("leaderboard").query("judge == @judge")
    return {(r.slice, r.generator): r.hallucination_rate for r in board.itertuples()}


@pytest.mark.parametrize(
    ("invalid_as", "m1_qa", "m2_summary"),
    [("hallucinated", 1 / 2, 1 / 3), ("faithful", 0 / 2, 0 / 3), ("excluded", 0 / 1, 0 / 2)],
)
def test_a_recorded_judge_ranked_per_subset_and_pooled(tmp_path, invalid_as, m1_qa, m2_summary):
    data = RunData(_judged_store(tmp_path, invalid_as))
    result = Leaderboard(slice_by=("subset",)).run(data)
    judged = _rates(result, "recorded:fj")
    assert judged[("subset=qa", "m1")] == pytest.approx(m1_qa)
    assert judged[("subset=qa", "m2")] == pytest.approx(1.0)
    assert judged[("subset=summary", "m1")] == pytest.approx(1 / 3)
    assert judged[("subset=summary", "m2")] == pytest.approx(m2_summary)
    m1_invalid = {"hallucinated": 1, "faithful": 0, "excluded": None}[invalid_as]
    n_m1 = 5 - (m1_invalid is None)
    assert judged[("all", "m1")] == pytest.approx((1 + (m1_invalid or 0)) / n_m1)
    human = _rates(result, "human")
    assert human[("subset=qa", "m2")] == 1.0 and human[("all", "m1")] == pytest.approx(2 / 5)
    kinds = set(result.table("leaderboard").query("judge == 'recorded:fj'")["judge_kind"])
    assert kinds == {"labeler"}  # a recorded judge, not a human


def test_the_recorded_judge_as_the_reference_as_the_faithjudge_leaderboard(tmp_path):
    data = RunData(_judged_store(tmp_path, "hallucinated"))
    result = Leaderboard(reference="recorded:fj", slice_by=("subset",)).run(data)
    wide = result.table("slice_rates")
    ref = wide[wide["judge_kind"] == "reference"].set_index("generator")
    assert set(ref["judge"]) == {"recorded:fj"}
    # m1: qa Consistent + Invalid, summary Inconsistent + 2 Consistent; m2: 2 + 1 (Invalid) of 5.
    assert ref.loc["m1", ["rate:subset=qa", "rate:subset=summary", "rate:all"]].tolist() == (
        pytest.approx([1 / 2, 1 / 3, 2 / 5])
    )
    assert ref.loc["m2", ["rate:subset=qa", "rate:subset=summary", "rate:all"]].tolist() == (
        pytest.approx([1.0, 1 / 3, 3 / 5])
    )
    board = result.table("leaderboard")
    assert "recorded:fj_rate" in board.columns and "human_rate" not in board.columns


# -- errors and skips ------------------------------------------------------------------------


def test_a_misspelt_slice_column_is_refused_with_a_close_match(tmp_path):
    data = RunData(_judged_store(tmp_path, "hallucinated"))
    with pytest.raises(InvalidInputError, match=r"'subst'.*Did you mean 'subset'") as info:
        Leaderboard(slice_by=("subst",)).run(data)
    assert info.value.field == "slice_by"


def test_a_dataset_without_the_slice_column_is_ranked_pooled_and_said(tmp_path):
    store = _judged_store(tmp_path, "hallucinated")
    other = tmp_path / "other.csv"
    other.write_text("text,model,label\na,m1,yes\nb,m2,no\nc,m1,no\nd,m2,yes\n")
    ingest(store, datasets.create_from_key(f"files[path={other},name=other,polarity=confirmed]"))
    result = Leaderboard(slice_by=("subset",)).run(RunData(store))
    assert "other: no response declares the slice column 'subset'" in result.skipped
    board = result.table("leaderboard")
    assert set(board.query("dataset == 'other'")["slice"]) == {"all"}
    wide = result.table("slice_rates").query("dataset == 'other'")
    assert wide["rate:subset=qa"].isna().all() and wide["rate:all"].notna().all()


def test_slice_by_from_a_key_and_without_it_no_slice_table(tmp_path):
    study = studies.create_from_key("leaderboard[slice_by=subset]")
    assert study.slice_by == ("subset",) and study.key == "leaderboard[slice_by=subset]"
    data = RunData(_judged_store(tmp_path, "hallucinated"))
    plain = Leaderboard().run(data)
    assert "slice_rates" not in [t.name for t in plain.tables]
    assert set(plain.table("leaderboard")["slice"]) == {"all"}


def test_the_study_command_writes_the_slice_table_and_the_report_shows_it(tmp_path, capsys):
    store = _judged_store(tmp_path, "hallucinated")
    args = ["-q", "study", "leaderboard[slice_by=subset]", "--run", str(store.path)]
    assert main([*args, "--n-resamples", "20", "--no-report"]) == 0
    (folder,) = (store.path / "studies").glob("leaderboard_slice_by=subset-*")
    wide = pd.read_csv(folder / "slice_rates.csv")
    assert {"rate:all", "rate:subset=qa", "rate:subset=summary"} <= set(wide.columns)
    assert main(["-q", "report", "--run", str(store.path)]) == 0
    report = (store.path / "report.md").read_text(encoding="utf-8")
    assert "rate:subset=qa" in report and "slice\\_rates.csv" in report
    capsys.readouterr()


def test_a_built_in_column_slices_the_board_from_the_responses_themselves(tmp_path):
    # prompt_variant is a response column, not a declared meta column: each variant is
    # ranked on its own (m1 hallucinates under few_shot only, m2 under zero_shot only).
    from realitycheck.records import Example, Label, Response

    store = RunStore(tmp_path / "run")
    examples, responses, labels = [], [], []
    for i in range(4):
        examples.append(Example(example_id=f"e{i}", dataset="d", task="qa", question=f"q{i}?"))
        for model in ("m1", "m2"):
            for variant in ("zero_shot", "few_shot"):
                rid = f"e{i}-{model}-{variant}"
                responses.append(
                    Response(
                        response_id=rid,
                        example_id=f"e{i}",
                        model=model,
                        text=f"answer {i}",
                        prompt_variant=variant,
                    )
                )
                wrong = (model == "m1") == (variant == "few_shot")
                labels.append(Label(response_id=rid, labeler="human", hallucinated=wrong))
    store.append(examples)
    store.append(responses)
    store.append(labels)
    result = Leaderboard(slice_by=("prompt_variant",)).run(RunData(store))
    rates = _rates(result, "human")
    assert rates[("prompt_variant=few_shot", "m1")] == 1.0
    assert rates[("prompt_variant=few_shot", "m2")] == 0.0
    assert rates[("prompt_variant=zero_shot", "m1")] == 0.0
    assert rates[("prompt_variant=zero_shot", "m2")] == 1.0
    assert rates[("all", "m1")] == rates[("all", "m2")] == 0.5
    assert not [s for s in result.skipped if "prompt_variant" in s]
