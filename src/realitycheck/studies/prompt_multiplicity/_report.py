"""The study's table captions and its plain-language finding."""

from __future__ import annotations

import pandas as pd

from realitycheck.studies import fmt

__all__ = ["CAPTIONS", "finding"]

ALPHA = 0.05
AXES = {"correctness": "correct vs incorrect", "consistency": "agnostic vs sensitive"}
MAX_SETTINGS = 4
CAPTIONS = {
    "multiplicity": "Per dataset, model and retrieval setting (retriever empty: none): "
    "accuracy mean and population std across prompt variants, accuracy under the default "
    "variant, ambiguity (share of questions whose answer changes across variants), mean "
    "self-consistency (probability that two distinct random variants agree), the share of "
    "prompt-agnostic questions (self-consistency >= tau = {s.tau}), the shares of "
    "prompt-agnostic factuality (paf), prompt-agnostic error (pae) and randomness (over the "
    "questions with a default answer), and the "
    "share of the default prompt's correct answers that are randomness. Answers agree by "
    "{s.agreement!r}; correctness from {s.reference!r} (else the choose stage's 'gold').",
    "questions": "Per question answered under two or more variants: the variants answered, "
    "self-consistency, prompt-agnostic (>= tau), whether the default prompt's answer is "
    "correct (empty: no default answer) and the category.",
    "detector_means": "Each detector's mean score (higher = more likely hallucinated) over "
    "the default prompt's answers, per model and retrieval setting (retriever empty: none): "
    "on correct vs incorrect answers and on "
    "prompt-agnostic vs prompt-sensitive questions (seed paper 004, Figure 4).",
    "detector_tests": "Per detector, retrieval setting and axis, the two-sided Wilcoxon "
    "signed-rank test across models (counted by name; the retrieval setting is its own "
    "factor, not another model) of the per-model differences (correct - incorrect; agnostic "
    "- sensitive); no p-value with fewer than {s.min_models} models (see note).",
    "transitions": "Each question's category without -> with retrieval, on the variants "
    "answered in both settings (paired by model, question and variant): count and share of "
    "the model's paired questions.",
    "retrieval_ambiguity": "Share of questions whose retrieved passage set changes across "
    "prompt variants (ambiguity over retrieved documents, seed paper 004 section 5.2).",
}


def _setting(retriever: str) -> str:
    return f"with {retriever}" if retriever else "without retrieval"


def _models(summary: pd.DataFrame) -> list[str]:
    """Per dataset, how many models (by name) under which retrieval settings."""
    out = []
    for ds, part in summary.groupby("dataset", sort=False):
        n = part["model"].nunique()
        settings = sorted(set(part["retriever"]))
        out.append(
            f"On {ds}, {n} model{'s' if n != 1 else ''} answered "
            + ", and ".join(_setting(r) for r in settings)
            + "."
        )
    return out[:MAX_SETTINGS]


def _settings(summary: pd.DataFrame) -> list[str]:
    out = []
    for row in summary.head(MAX_SETTINGS).to_dict("records"):
        who = row["model"] + (f" with {row['retriever']}" if row["retriever"] else "")
        out.append(
            f"On {row['dataset']}, {who} scores {fmt(row['accuracy_mean'], 2)} ± "
            f"{fmt(row['accuracy_std'], 2)} across {row['variants']} variants; "
            f"{fmt(row['ambiguity'], 2)} of its {row['questions']} questions change answer, "
            f"{fmt(row['randomness'], 2)} are randomness, and "
            f"{fmt(row['randomness_among_default_correct'], 2)} of the default prompt's "
            "correct answers are randomness, not factuality."
        )
    if len(summary) > MAX_SETTINGS:
        out.append(f"({len(summary) - MAX_SETTINGS} more model settings in the table.)")
    return out


def _verdict(p_correct: float, p_consistent: float) -> str:
    correct, consistent = p_correct < ALPHA, p_consistent < ALPHA
    if consistent and not correct:
        return "tracks consistency, not correctness"
    if correct and not consistent:
        return "tracks correctness, not consistency"
    if correct and consistent:
        return "tracks both correctness and consistency"
    return "tracks neither at the 0.05 level"


def _detection(tests: pd.DataFrame, min_models: int) -> list[str]:
    if tests.empty:
        return []
    wide = tests.pivot_table(
        index=["dataset", "detector", "retriever"], columns="axis", values="p_value", dropna=False
    )
    wide = wide.reindex(columns=list(AXES))
    tested = wide.dropna(how="all")
    if tested.empty:
        n = int(tests["n_models"].max())
        if n < min_models:
            return [
                f"No detector was tested across models: the Wilcoxon test needs at least "
                f"{min_models} models with both sides of an axis in one retrieval setting, "
                f"and this run has at most {n}."
            ]
        return ["No detector was tested across models: every model's difference is zero."]
    out = []
    rows = tested.head(MAX_SETTINGS).reset_index()
    for ds, det, retriever, p_correct, p_consistent in rows[
        ["dataset", "detector", "retriever", *AXES]
    ].itertuples(index=False):
        where = f"On {ds} {_setting(str(retriever))}, {det}"
        if pd.isna(p_correct) or pd.isna(p_consistent):
            parts = [
                f"p = {fmt(p)} {AXES[axis]}" if pd.notna(p) else f"no p-value {AXES[axis]}"
                for axis, p in (("correctness", p_correct), ("consistency", p_consistent))
            ]
            out.append(f"{where}: Wilcoxon {', '.join(parts)} (see detector_tests).")
            continue
        out.append(
            f"{where} {_verdict(p_correct, p_consistent)} (Wilcoxon p = {fmt(p_correct)} "
            f"{AXES['correctness']}, {fmt(p_consistent)} {AXES['consistency']})."
        )
    return out


def _flows(frame: pd.DataFrame) -> list[str]:
    out = []
    random = frame[frame["without"] == "randomness"]
    pooled = random.groupby(["dataset", "retriever"], sort=True)
    for (ds, retriever), part in pooled:
        total = part["n"].sum()
        if total:
            share = part.loc[part["with"] == "prompt-agnostic factuality", "n"].sum() / total
            out.append(
                f"On {ds}, with {retriever}, {fmt(share, 2)} of the randomness questions "
                "become prompt-agnostic factuality."
            )
    return out[:MAX_SETTINGS]


def finding(
    frames: dict[str, pd.DataFrame], skipped: list[str], *, tau: float, min_models: int
) -> str:
    """The finding: models, each model setting, then detectors, then retrieval; or why not run."""
    summary = frames["multiplicity"]
    if summary.empty:
        first = skipped[0] if skipped else "the run has no responses"
        return (
            "skipped: no dataset has questions answered under two or more prompt variants "
            f"with correctness labels, so nothing was measured ({first})."
        )
    tests = frames["detector_tests"]
    sentences = [*_models(summary), *_settings(summary), *_detection(tests, min_models)]
    sentences += _flows(frames["transitions"])
    sentences.append(f"Prompt-agnostic means self-consistency >= {tau:g}.")
    return " ".join(sentences)
