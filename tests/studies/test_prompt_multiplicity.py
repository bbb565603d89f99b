"""The prompt multiplicity study on synthetic choices with known answers.

Every number is recomputed here from the raw choices: self-consistency by
enumerating the pairs of distinct variants, the taxonomy by its definition,
and the Wilcoxon test by scipy on the per-model differences.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from realitycheck.cli import main
from realitycheck.records import Example, Label, Response, Score
from realitycheck.store import RunData, RunStore, load_results
from realitycheck.studies import studies

MODELS = [f"org/m{i}" for i in range(7)]
VARIANTS = ["default", "shuffle_options[seed=1]", "shuffle_options[seed=2]"]
QUESTIONS = 12
RAG = "bm25[corpus=c.jsonl,k=2]"
DETECTOR = "toy_score"


def _choices(seed: int = 0) -> dict[tuple[str, str, int, str], int]:
    """(model, retriever, question, variant) -> chosen option (gold is 0 of 3)."""
    rng = np.random.default_rng(seed)
    out = {}
    for m, model in enumerate(MODELS):
        for q in range(QUESTIONS):
            stable = rng.random() < 0.5
            first = int(rng.integers(0, 3))
            for v, variant in enumerate(VARIANTS):
                if model == MODELS[1] and q == 3 and v == 2:
                    continue  # a variant skipped for one question
                out[model, "", q, variant] = first if stable else int(rng.integers(0, 3))
                if m == 0:
                    out[model, RAG, q, variant] = 0 if q % 2 else int(rng.integers(0, 3))
    return out


def _store(path, choices, *, detector: bool = True) -> RunStore:
    store = RunStore(path)
    store.append(
        [
            Example(
                example_id=f"toy/{q}",
                dataset="toy",
                task="mcq",
                question=f"q{q}",
                choices=("a", "b", "c"),
                references=("a",),
                meta={"gold": [0]},
            )
            for q in range(QUESTIONS)
        ]  # fmt: skip
    )
    responses, labels, scores = [], [], []
    rng = np.random.default_rng(1)
    for (model, retriever, q, variant), chosen in choices.items():
        rid = f"toy/{q}/{variant}/{model}/{'rag' if retriever else 'plain'}"
        meta: dict = {"chosen": chosen, "gold": [0]}
        if retriever:
            meta |= {"passages": [f"p{(q + len(variant)) % 3}", "p9"], "retriever": retriever}
        responses.append(
            Response(response_id=rid, example_id=f"toy/{q}", model=model, text="abc"[chosen],
                     prompt_variant=variant, meta=meta)
        )  # fmt: skip
        labels.append(Label(response_id=rid, labeler="gold", hallucinated=chosen != 0))
        value = float(rng.normal()) + (0.8 if chosen != 0 else 0.0)
        scores.append(Score(response_id=rid, detector=DETECTOR, value=value))
    store.append(responses)
    store.append(labels)
    if detector:
        store.append(scores)
    return store


def _expected(choices, model, retriever, tau=0.8):
    """Independent measures of one model's answers."""
    rows = {}
    for (m, r, q, v), c in choices.items():
        if (m, r) == (model, retriever):
            rows.setdefault(q, {})[v] = c
    sc, category = {}, {}
    for q, given in rows.items():
        pairs = list(itertools.permutations(given.values(), 2))
        sc[q] = sum(a == b for a, b in pairs) / len(pairs)
        right = given["default"] == 0
        category[q] = (
            "randomness" if sc[q] < tau
            else "prompt-agnostic factuality" if right
            else "prompt-agnostic error"
        )  # fmt: skip
    answered = [[g[v] == 0 for g in rows.values() if v in g] for v in VARIANTS]
    acc = [np.mean(a) for a in answered if a]
    ambiguity = np.mean([len(set(g.values())) > 1 for g in rows.values()])
    return sc, category, acc, ambiguity, rows


def test_measures_match_a_direct_computation(tmp_path):
    choices = _choices()
    result = studies.create("prompt_multiplicity").run(RunData(_store(tmp_path / "r", choices)))
    summary = result.table("multiplicity").set_index(["model", "retriever"])
    questions = result.table("questions")
    for model, retriever in [*((m, "") for m in MODELS), (MODELS[0], RAG)]:
        sc, category, acc, ambiguity, rows = _expected(choices, model, retriever)
        row = summary.loc[(model, retriever)]
        assert row["accuracy_mean"] == pytest.approx(np.mean(acc))
        assert row["accuracy_std"] == pytest.approx(np.std(acc))
        assert row["ambiguity"] == pytest.approx(ambiguity)
        assert row["questions"] == QUESTIONS and row["variants"] == 3
        shares = pd.Series(category).value_counts(normalize=True)
        assert row["paf"] == pytest.approx(shares.get("prompt-agnostic factuality", 0.0))
        assert row["randomness"] == pytest.approx(shares.get("randomness", 0.0))
        right = [q for q, g in rows.items() if g["default"] == 0]
        among = np.mean([category[q] == "randomness" for q in right]) if right else np.nan
        assert row["randomness_among_default_correct"] == pytest.approx(among, nan_ok=True)
        mine = questions[(questions["model"] == model) & (questions["retriever"] == retriever)]
        got = dict(zip(mine["example_id"], mine["self_consistency"], strict=True))
        assert got == pytest.approx({f"toy/{q}": v for q, v in sc.items()})
        assert dict(zip(mine["example_id"], mine["category"], strict=True)) == {
            f"toy/{q}": c for q, c in category.items()
        }
    assert summary.loc[(MODELS[1], "")].pipe(lambda r: r["variants"]) == 3
    n_variants = questions.set_index(["model", "example_id"]).loc[(MODELS[1], "toy/3")]
    assert n_variants["n_variants"] == 2


def _detection_truth(tmp_path, choices):
    data = RunData(_store(tmp_path / "d", choices))
    frame = data.frame("toy").assign(score=data.detector_scores("toy")[DETECTOR])
    frame = frame[frame["prompt_variant"] == "default"]
    frame["retriever"] = [RAG if "rag" in rid else "" for rid in frame.index]
    out = []
    for (model, retriever), part in frame.groupby(["model", "retriever"]):
        sc, _, _, _, rows = _expected(choices, model, retriever)
        q = part["example_id"].str.split("/").str[1].astype(int)
        agn = q.map(sc).to_numpy() >= 0.8
        right = np.array([rows[k]["default"] == 0 for k in q])
        s = part["score"].to_numpy()
        means = [s[mask].mean() if mask.any() else np.nan for mask in (right, ~right, agn, ~agn)]
        out.append([model, retriever, *means])
    return data, pd.DataFrame(out, columns=["model", "retriever", "c", "i", "a", "s"])


def test_detector_means_and_wilcoxon_match_scipy(tmp_path):
    choices = _choices()
    data, truth = _detection_truth(tmp_path, choices)
    result = studies.create("prompt_multiplicity").run(data)
    means = result.table("detector_means").sort_values(["model", "retriever"])
    np.testing.assert_allclose(means["mean_correct"], truth["c"])
    np.testing.assert_allclose(means["mean_incorrect"], truth["i"])
    np.testing.assert_allclose(means["mean_agnostic"], truth["a"])
    np.testing.assert_allclose(means["mean_sensitive"], truth["s"])
    tests = result.table("detector_tests").set_index(["retriever", "axis"])
    assert len(tests) == 2 * 2  # (no retrieval, RAG) x two axes: models counted by name
    plain = truth[truth["retriever"] == ""]
    for axis, (a, b) in {"correctness": ("c", "i"), "consistency": ("a", "s")}.items():
        diffs = (plain[a] - plain[b]).dropna()
        row = tests.loc[("", axis)]
        assert row["n_models"] == len(diffs) >= 6  # the 7 models without retrieval, not 8
        assert row["p_value"] == pytest.approx(stats.wilcoxon(diffs).pvalue)
        assert row["mean_difference"] == pytest.approx(diffs.mean())
        rag = tests.loc[(RAG, axis)]  # one model answered with retrieval: no p-value
        assert rag["n_models"] <= 1 and np.isnan(rag["p_value"])
    assert "Wilcoxon p = " in result.finding
    assert "toy without retrieval" in result.finding
    assert f"On toy, {len(MODELS)} models answered without retrieval, and with {RAG}." in (
        result.finding
    )


def test_too_few_models_gives_no_p_value_but_says_why(tmp_path):
    choices = {k: v for k, v in _choices().items() if k[0] in MODELS[:3] and not k[1]}
    result = studies.create("prompt_multiplicity").run(RunData(_store(tmp_path / "r", choices)))
    tests = result.table("detector_tests")
    assert tests["p_value"].isna().all() and (tests["n_models"] == 3).all()
    assert tests["note"].str.contains("needs at least 6").all()
    assert "needs at least 6 models" in result.finding
    assert result.table("transitions").empty and result.table("retrieval_ambiguity").empty


def test_transitions_pair_answers_by_question_and_variant(tmp_path):
    choices = _choices()
    del choices[MODELS[0], RAG, 5, VARIANTS[2]]  # this question pairs on two variants only
    result = studies.create("prompt_multiplicity").run(RunData(_store(tmp_path / "r", choices)))
    flow = result.table("transitions")
    expected = {}
    for q in range(QUESTIONS):
        kept = [v for v in VARIANTS if (MODELS[0], RAG, q, v) in choices]
        sub = {k: c for k, c in choices.items()
               if k[0] == MODELS[0] and k[2] == q and k[3] in kept}  # fmt: skip
        before = _expected(sub, MODELS[0], "")[1][q]
        after = _expected(sub, MODELS[0], RAG)[1][q]
        expected[before, after] = expected.get((before, after), 0) + 1
    got = {(r.without, r.with_): r.n for r in flow.rename(columns={"with": "with_"}).itertuples()}
    assert {k: v for k, v in got.items() if v} == expected
    assert flow["share"].sum() == pytest.approx(1.0)
    ambiguity = result.table("retrieval_ambiguity")
    changed = [len({(q + len(v)) % 3 for v in VARIANTS if (MODELS[0], RAG, q, v) in choices}) > 1
               for q in range(QUESTIONS)]  # fmt: skip
    assert ambiguity["ambiguity"].tolist() == pytest.approx([np.mean(changed)])
    stems = [f.stem for f in result.figures]
    assert stems[:2] == ["taxonomy_toy", "accuracy_toy"] and stems[2].startswith("flow_toy_bm25")
    assert all(f.png.startswith(b"\x89PNG") for f in result.figures)


def test_label_agreement_and_tau_are_parameters(tmp_path):
    choices = {k: v for k, v in _choices().items() if k[0] == MODELS[0] and not k[1]}
    data = RunData(_store(tmp_path / "r", choices, detector=False))
    result = studies.create_from_key("prompt_multiplicity[agreement=label,tau=0.3]").run(data)
    # answers become 0 (correct) / 1 (wrong): _expected counts answer 0 as right
    labels = {k: int(c != 0) for k, c in choices.items()}
    sc, category, *_ = _expected(labels, MODELS[0], "", tau=0.3)
    questions = result.table("questions").set_index("example_id")
    order = [f"toy/{q}" for q in range(QUESTIONS)]
    assert questions.loc[order, "self_consistency"].tolist() == pytest.approx(list(sc.values()))
    assert questions.loc[order, "category"].tolist() == list(category.values())
    assert result.table("detector_tests").empty


def test_a_run_without_variants_is_skipped_cleanly(tmp_path):
    store = RunStore(tmp_path / "r")
    store.append([Example(example_id="x/1", dataset="x", task="qa", question="q")])
    store.append([Response(response_id="x/1/a", example_id="x/1", model="m", text="t")])
    store.append([Label(response_id="x/1/a", labeler="human", hallucinated=False)])
    result = studies.create("prompt_multiplicity").run(RunData(store))
    assert result.finding.startswith("skipped: ")
    assert result.skipped == ("x: m: skipped: answered under one prompt variant only",)
    assert all(t.frame.empty for t in result.tables) and not result.figures
    args = ["-q", "study", "prompt_multiplicity", "--run", str(store.path), "--no-report"]
    assert main(args) == 0
    (stored,) = [r for r in load_results(store) if r.study == "prompt_multiplicity"]
    assert stored.finding == result.finding


MODEL = "<img src=x onerror=alert(1)>"


def test_free_form_answers_agree_when_their_normalised_text_matches(tmp_path):
    store = RunStore(tmp_path / "r")
    store.append([Example(example_id=f"f/{q}", dataset="f", task="qa", question="q")
                  for q in range(2)])  # fmt: skip
    texts = {0: ["Paris.", "paris", "The Paris"], 1: ["Rome", "Paris", "rome!"]}
    wrong = {0: [False, False, False], 1: [False, True, False]}
    variants = ["zero_shot", "zero_shot@2", "few_shot"]
    for q, answers in texts.items():
        for v, text in enumerate(answers):
            rid = f"f/{q}/{variants[v]}"
            store.append([Response(response_id=rid, example_id=f"f/{q}", model=MODEL, text=text,
                                   prompt_variant=variants[v])])  # fmt: skip
            store.append([Label(response_id=rid, labeler="human", hallucinated=wrong[q][v])])
    result = studies.create("prompt_multiplicity").run(RunData(store))
    questions = result.table("questions")
    assert questions["self_consistency"].tolist() == pytest.approx([1.0, 1 / 3])
    assert questions["category"].tolist() == ["prompt-agnostic factuality", "randomness"]
    assert result.table("multiplicity")["default_variant"].tolist() == ["zero_shot"]
    assert MODEL in result.finding
    assert main(["-q", "study", "prompt_multiplicity", "--run", str(store.path)]) == 0
    html = (store.path / "report.html").read_text()
    assert "Prompt multiplicity" in html and MODEL not in html and "&lt;img" in html


def test_a_repeated_answer_from_another_plan_is_left_out_and_said(tmp_path):
    choices = {k: v for k, v in _choices().items() if k[0] == MODELS[0] and not k[1]}
    store = _store(tmp_path / "r", choices, detector=False)
    rid = f"toy/0/default/{MODELS[0]}/zz-other-plan"  # sorts after the first answer's id
    other = (choices[MODELS[0], "", 0, "default"] + 1) % 3
    store.append([Response(response_id=rid, example_id="toy/0", model=MODELS[0], text="x",
                           prompt_variant="default", meta={"chosen": other})])  # fmt: skip
    store.append([Label(response_id=rid, labeler="gold", hallucinated=other != 0)])
    result = studies.create("prompt_multiplicity").run(RunData(store))
    sc = _expected(choices, MODELS[0], "")[0]
    got = result.table("questions").set_index("example_id")["self_consistency"]
    assert got[[f"toy/{q}" for q in range(QUESTIONS)]].tolist() == pytest.approx(list(sc.values()))
    assert result.skipped == (
        "toy: 1 response(s) repeat a model, retrieval setting, question and variant already "
        "answered (another plan); the first by response id was kept",
    )


@pytest.mark.parametrize(
    ("key", "field"), [("prompt_multiplicity[tau=1.5]", "tau"),
                       ("prompt_multiplicity[agreement=text]", "agreement")]
)  # fmt: skip
def test_a_bad_parameter_is_a_clear_error_before_any_work(tmp_path, capsys, key, field):
    store = RunStore(tmp_path / "r")
    store.append([Example(example_id="x/1", dataset="x", task="qa", question="q")])
    assert main(["-q", "study", key, "--run", str(store.path), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert field in err and "prompt_multiplicity" in err and "Traceback" not in err
