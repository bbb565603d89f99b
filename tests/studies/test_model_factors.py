"""The model factors study: rates by size within a family and base vs tuned pairs, from metadata."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from realitycheck.analysis import Bootstrap
from realitycheck.cli import main
from realitycheck.records import Example, Label, Response
from realitycheck.records.model_info import ModelInfo
from realitycheck.runner import record_models
from realitycheck.store import RunData, RunStore, load_results
from realitycheck.studies import model_factor_table, studies, tuning_pairs

RATES = {"fam/a-1b": 0.7, "fam/a-7b": 0.5, "fam/a-7b-chat": 0.3, "fam/a-70b": 0.2, "other/x": 0.4}
INFO = {
    "fam/a-1b": ModelInfo(model="fam/a-1b", family="fam", size=1e9, instruction_tuned=False),
    "fam/a-7b": ModelInfo(model="fam/a-7b", family="fam", size=7e9, instruction_tuned=False),
    "fam/a-7b-chat": ModelInfo(
        model="fam/a-7b-chat", family="fam", size=7e9, instruction_tuned=True, decoding="greedy"
    ),
    "fam/a-70b": ModelInfo(model="fam/a-70b", family="fam", size=70e9),
}


def _run(path, seed=0, n=60):
    """Every model answers every example once, except a-70b, which skips the first 10."""
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    examples = [Example(example_id=f"toy/{i}", dataset="toy", task="qa", question=f"q{i}")
                for i in range(n)]  # fmt: skip
    responses, labels, rows = [], [], []
    for model, rate in RATES.items():
        for i in range(10 if model == "fam/a-70b" else 0, n):
            rid = f"toy/{i}/{model}"
            h = bool(rng.random() < rate)
            responses.append(
                Response(response_id=rid, example_id=f"toy/{i}", model=model, text="a")
            )
            labels.append(Label(response_id=rid, labeler="human", hallucinated=h))
            rows.append({"model": model, "example_id": f"toy/{i}", "h": float(h)})
    store.append(examples)
    store.append(responses)
    store.append(labels)
    return store, pd.DataFrame(rows)


def test_rates_size_trend_and_pairs_match_a_direct_computation(tmp_path):
    store, truth = _run(tmp_path / "run")
    record_models(store, INFO)
    result = studies.create("model_factors").run(
        RunData(store), bootstrap=Bootstrap(confidence=0.9)
    )
    models = result.table("models").set_index("model")
    assert (
        models.loc["other/x", "family"] == "unknown" and not models.loc["other/x", "has_metadata"]
    )
    assert models.loc["fam/a-70b", "instruction_tuned"] == "unknown"
    assert models.loc["fam/a-7b-chat", "decoding"] == "greedy"
    for model, part in truth.groupby("model"):
        k, n = int(part["h"].sum()), len(part)
        ci = stats.binomtest(k, n).proportion_ci(0.9, method="wilson")
        assert models.loc[model, "rate"] == pytest.approx(k / n)
        assert models.loc[model, ["ci_low", "ci_high"]].tolist() == pytest.approx([ci.low, ci.high])
    trend = result.table("size_trend")
    assert trend["model"].tolist() == ["fam/a-1b", "fam/a-7b", "fam/a-7b-chat", "fam/a-70b"]
    common = truth[truth["example_id"].isin([f"toy/{i}" for i in range(10, 60)])]
    rates = common.groupby("model")["h"].mean()
    assert (trend["n_common"] == 50).all()
    np.testing.assert_allclose(trend["rate"], rates[trend["model"]])
    rho = stats.spearmanr(trend["size"], trend["rate"]).statistic
    slope = np.polyfit(np.log10(trend["size"]), trend["rate"], 1)[0]
    assert trend["spearman_rho"].iloc[0] == pytest.approx(rho)
    assert trend["slope_per_tenfold"].iloc[0] == pytest.approx(slope)
    (pair,) = result.table("tuning_pairs").to_dict("records")
    assert (pair["base"], pair["tuned"], pair["n_examples"]) == ("fam/a-7b", "fam/a-7b-chat", 60)
    wide = truth.pivot(index="example_id", columns="model", values="h")
    worse = int((wide["fam/a-7b-chat"] > wide["fam/a-7b"]).sum())
    better = int((wide["fam/a-7b-chat"] < wide["fam/a-7b"]).sum())
    assert (pair["tuned_worse"], pair["tuned_better"]) == (worse, better)
    assert pair["sign_test_p"] == pytest.approx(stats.binomtest(worse, worse + better).pvalue)
    assert pair["difference"] == pytest.approx(
        wide["fam/a-7b-chat"].mean() - wide["fam/a-7b"].mean()
    )
    assert [f.stem for f in result.figures] == ["size_toy"]
    assert (
        "fam goes from a rate of" in result.finding
        and "1 models have no metadata" in result.finding
    )


def test_without_metadata_every_model_is_unknown_and_nothing_is_guessed(tmp_path):
    store, _ = _run(tmp_path / "run", n=12)
    result = studies.create("model_factors").run(RunData(store))
    assert set(result.table("models")["family"]) == {"unknown"}
    assert result.table("size_trend").empty and result.table("tuning_pairs").empty
    assert result.finding.startswith("None of the 5 models has metadata")
    assert not result.figures


def test_factor_table_and_pairs_helpers():
    table = model_factor_table(["z", "fam/a-7b-chat", "fam/a-7b", "fam/a-1b"], INFO)
    assert table["model"].tolist() == ["fam/a-1b", "fam/a-7b", "fam/a-7b-chat", "z"]
    assert table.set_index("model").loc["z", "instruction_tuned"] == "unknown"
    assert tuning_pairs(table) == [("fam", 7e9, "fam/a-7b", "fam/a-7b-chat")]


def test_cli_study_records_the_models_file_and_reports_a_bad_one(tmp_path, capsys):
    store, _ = _run(tmp_path / "run", n=12)
    models = tmp_path / "models.csv"
    models.write_text("model,family,size,instruction_tuned\nfam/a-1b,fam,1e9,no\n"
                      "fam/a-7b,fam,7e9,no\n")  # fmt: skip
    args = ["-q", "study", "model_factors", "--run", str(store.path), "--no-report"]
    assert main([*args, "--models", str(models)]) == 0, capsys.readouterr().err
    assert RunData(store).models == {
        "fam/a-1b": ModelInfo(model="fam/a-1b", family="fam", size=1e9, instruction_tuned=False),
        "fam/a-7b": ModelInfo(model="fam/a-7b", family="fam", size=7e9, instruction_tuned=False),
    }
    (stored,) = [r for r in load_results(store) if r.study == "model_factors"]
    assert stored.table("size_trend")["model"].tolist() == ["fam/a-1b", "fam/a-7b"]
    models.write_text("model,family,size\nfam/a-1b,fam,big\n")
    assert main([*args, "--models", str(models)]) == 2
    err = capsys.readouterr().err
    assert "models.csv, line 2, field 'fam/a-1b.size'" in err and "Traceback" not in err
