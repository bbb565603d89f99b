"""Issue 24's whole loop: a run's own generations get human labels, and the papers' Δ tables.

NQ-Open questions are answered by two models (the tiny Llama of ``conftest.py``
through the ``hf`` backend, and the scripted ``mock`` backend, which supplies
log-probs and hidden states too) under two prompt variants; ROUGE-L and an LLM
judge label them; white-box detectors score them. Then ``annotate export``
writes a blinded sheet for two annotators, the sheet is filled as two people
would (by a rule, one of them disagreeing now and then), ``annotate import``
turns it into ``human:<annotator>`` labels and their aggregate ``human``, and
``evaluate`` / ``study labeler_shift`` / the report measure every detector
against those human labels, next to ROUGE and the judge, per model and prompt
variant, with Janiak et al.'s Δ%.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from realitycheck.cli import main
from realitycheck.store import RunStore

pytest.importorskip("torch")

LIMIT = 7
DETECTORS = "length,perplexity,mean_token_entropy,ln_entropy,eigenscore,logdet,erank"
PLAN = "default[n_samples=2,hidden_layers=1,max_tokens=6]"
# A judge that calls an answer correct when it holds the word "the": a stand-in whose
# verdicts differ from ROUGE-L's and from the annotators'.
JUDGE = (
    'qa_judge[judge=mock[reply="{\\"verdict\\": \\"incorrect\\"}",'
    'replies="answer to grade: .*the =>{{\\"verdict\\": \\"correct\\"}}"]]'
)
# The second model answers by the question's first word, so its answers vary too.
MOCK = (
    "mock[reply=Paris,replies=who=>the king of Rome+when=>in a year+where=>London,"
    "sample_replies=Paris+Lyon,model=scripted]"
)


def _human_verdict(response: str, annotator: str, row: int) -> str:
    """How the two annotators judge: faithful when the answer holds 'a', 'king' or
    'london'; bo disagrees on every seventh row."""
    hallucinated = not ({"a", "king", "london"} & set(response.lower().split()))
    if annotator == "bo" and row % 7 == 3:
        hallucinated = not hallucinated
    return "Hallucinated" if hallucinated else "Faithful"


@pytest.fixture(scope="module")
def run(tiny_lm_dir, data_dir, tmp_path_factory):
    """The run after generate, label, detect, export, annotation and import."""
    root = tmp_path_factory.mktemp("hitl")
    out = root / "run"
    common = ["-d", "nq-open", "--data-dir", str(data_dir), "--run", str(out)]
    for backend in (f'hf[model="{tiny_lm_dir}",device=cpu]', MOCK):
        command = ["-q", "generate", *common, "-b", backend, "--plan", PLAN]
        command += ["--variant", "zero_shot", "--variant", "few_shot", "--limit", str(LIMIT)]
        command += ["--no-cache"]
        assert main(command) == 0
    assert main(["-q", "label", *common, "-l", "rouge_l", "-l", JUDGE, "--no-cache"]) == 0
    assert main(["-q", "detect", *common, "-D", DETECTORS]) == 0
    sheets = root / "round1"
    export = ["-q", "annotate", "export", "--run", str(out), "--export-dir", str(sheets)]
    export += ["--strategy", "stratified", "--by", "model", "--n", "24", "--annotators", "2"]
    export += ["--format", "csv", "--seed", "3"]
    assert main(export) == 0
    rows = list(csv.DictReader((sheets / "items.csv").open(encoding="utf-8")))
    for i, row in enumerate(rows):
        row["annotator"] = {"1": "ann", "2": "bo"}[row["slot"]]
        row["verdict"] = _human_verdict(row["response"], row["annotator"], i)
    filled = root / "filled.csv"
    with filled.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert main(["-q", "annotate", "import", "--run", str(out), str(filled)]) == 0
    return out, rows


def test_the_exported_sheet_is_blinded_and_balanced_over_the_models(run):
    out, rows = run
    responses = RunStore(out).frame("responses").set_index("response_id")
    ids = sorted({r["response_id"] for r in rows})
    assert len(ids) == 24 and len(rows) == 48  # two slots per item
    assert responses.loc[ids, "model"].value_counts().tolist() == [12, 12]
    header = set(rows[0])
    assert not {"rouge_l", "qa_judge", "verdicts"} & header  # blinded by default
    assert {"question", "references", "response"} <= header


def test_the_humans_become_labels_and_their_majority_the_reference(run):
    out, rows = run
    labels = RunStore(out).frame("labels")
    by = {k: g.set_index("response_id")["hallucinated"] for k, g in labels.groupby("labeler")}
    assert {"human:ann", "human:bo", "human"} <= set(by)
    assert len(by["human"]) == 24
    for row in rows:
        said = row["verdict"] == "Hallucinated"
        assert by[f"human:{row['annotator']}"][row["response_id"]] == said
    # Majority of two, a tie read as hallucinated: hallucinated when either says so.
    either = pd.concat([by["human:ann"], by["human:bo"]], axis=1).any(axis=1)
    assert by["human"].sort_index().tolist() == either.sort_index().tolist()


def test_evaluate_measures_white_box_detectors_against_the_humans_per_model_and_variant(
    run, data_dir, capsys
):
    out, _ = run
    command = ["evaluate", "-d", "nq-open", "--data-dir", str(data_dir), "--run", str(out)]
    command += ["--reference", "human", "--slice-by", "model,prompt_variant", "--n-resamples"]
    assert main([*command, "50"]) == 0
    capsys.readouterr()
    metrics = pd.read_csv(out / "metrics.csv")
    auroc = metrics[(metrics["metric"] == "auroc") & (metrics["labeler"] == "human")]
    slices = set(auroc["slice"])
    assert {"all", "prompt_variant=zero_shot", "prompt_variant=few_shot"} <= slices
    assert {s for s in slices if s.startswith("model=")} == {
        "model=scripted",
        f"model={next(iter(_models(out) - {'scripted'}))}",
    }
    # Perplexity against the humans on the items they labelled, computed here independently.
    store = RunStore(out)
    human = store.frame("labels").query("labeler == 'human'").set_index("response_id")
    scores = store.frame("scores").query("detector == 'perplexity'").set_index("response_id")
    both = human[["hallucinated"]].join(scores[["value"]], how="inner")
    expected = roc_auc_score(both["hallucinated"].astype(int), both["value"])
    row = auroc[(auroc["detector"] == "perplexity") & (auroc["slice"] == "all")].iloc[0]
    assert row["value"] == pytest.approx(expected)
    assert row["n"] == 24  # only the items the humans labelled, of 28
    # The base rate sits beside the PR-AUC, and every white-box detector is measured.
    assert {"perplexity", "ln_entropy", "eigenscore", "logdet", "erank"} <= set(auroc["detector"])
    pr = metrics[(metrics["metric"] == "pr_auc") & (metrics["labeler"] == "human")]
    assert np.allclose(pr["base_rate"], pr["n_positive"] / pr["n"])


def test_labeler_shift_gives_the_delta_per_model_and_prompt_variant(run, capsys):
    out, _ = run
    assert main(["study", "labeler_shift", "--run", str(out), "--reference", "human"]) == 0
    capsys.readouterr()
    wide = pd.read_csv(out / "studies" / "labeler_shift" / "paired_wide.csv")
    assert {"rouge_l"} <= set(wide["labeler"]) and any(wide["labeler"].str.startswith("qa_judge"))
    assert set(wide["reference"]) == {"human"}
    for variant in ("zero_shot", "few_shot", "all"):
        assert {f"{variant}: labeler AUROC", f"{variant}: reference AUROC", f"{variant}: Δ%"} <= (
            set(wide.columns)
        )
    assert set(wide["model"]) >= {"scripted", "all"}
    paired = pd.read_csv(out / "studies" / "labeler_shift" / "paired.csv")
    done = paired.dropna(subset=["delta_ref_pct"])
    assert not done.query("model != 'all' and prompt_variant != 'all'").empty  # per cell
    assert not done.query("model == 'all' and prompt_variant == 'all'").empty  # pooled
    expected = (done["reference_auroc"] - done["labeler_auroc"]) / done["labeler_auroc"] * 100
    assert np.allclose(done["delta_ref_pct"], expected)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Δ%" in html and "human:ann" not in html.split("Detector metrics")[0]


def _models(out) -> set[str]:
    return set(RunStore(out).frame("responses")["model"])


def test_the_agreement_of_the_annotators_is_stored_for_the_report(run):
    out, _ = run
    result = json.loads((out / "studies" / "annotation" / "result.json").read_text())
    assert "ann" in json.dumps(result) and "bo" in json.dumps(result)
