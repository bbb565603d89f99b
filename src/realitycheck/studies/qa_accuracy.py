"""QA accuracy: per generator and prompt, refusals and accuracy under every labeler."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from realitycheck.analysis import Bootstrap, refusal_mask
from realitycheck.metrics import wilson_interval
from realitycheck.params import Interval, NonEmptyStr, OrNone, SequenceOf, as_tuple, param
from realitycheck.records.keys import LabelKey
from realitycheck.store import RunData, StudyFigure, StudyResult, StudyTable
from realitycheck.studies import Study, study
from realitycheck.studies.leaderboard import dot_plot
from realitycheck.text import short_names

__all__ = ["REFUSAL_PHRASES", "QaAccuracy", "paired_difference_ci"]

QA_TASKS = ("qa", "rag_qa")
_GROUP = ["task", "model", "prompt_variant"]


REFUSAL_PHRASES: tuple[str, ...] = (
    "no comment",
    "i don't know",
    "i do not know",
    "i cannot answer",
    "i can't answer",
    "unable to answer",
    "i'm not sure",
    "i am not sure",
)
"""Default phrases that mark a QA answer as a refusal (matched case-insensitively)."""


_DEFAULTS = Bootstrap()
"""The bootstrap settings' defaults, declared once at :class:`Bootstrap`'s fields."""


def paired_difference_ci(
    a: npt.NDArray[np.bool_],
    b: npt.NDArray[np.bool_],
    *,
    n_resamples: int = _DEFAULTS.n_resamples,
    confidence: float = _DEFAULTS.confidence,
    seed: int = _DEFAULTS.seed,
) -> tuple[float, float, float]:
    """Difference of two paired proportions ``mean(a) - mean(b)``, percentile-bootstrap CI.

    Resampling items with replacement only changes the counts of the four
    (a, b) cells, so each resample is one multinomial draw of those counts,
    which is the ordinary item bootstrap computed in O(resamples).

    Returns:
        ``(difference, low, high)``; NaN for no items.
    """
    n = int(a.size)
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    n10 = int(np.sum(a & ~b))
    n01 = int(np.sum(~a & b))
    cells = np.array([n10, n01, n - n10 - n01], dtype=float) / n
    draws = np.random.default_rng(seed).multinomial(n, cells, size=n_resamples)
    diffs = (draws[:, 0] - draws[:, 1]) / n
    low, high = np.quantile(diffs, [(1 - confidence) / 2, (1 + confidence) / 2])
    return (n10 - n01) / n, float(low), float(high)


@study("qa_accuracy")
@dataclass(frozen=True, kw_only=True)
class QaAccuracy(Study):
    """Accuracy of each generator and prompt variant on QA, under each labeler.

    Follows the QA accuracy table of Janiak et al. (2025, "The Illusion of
    Progress: Re-evaluating Hallucination Detection in LLMs", Table 8): for
    every dataset, the responses to QA examples (task ``qa`` or ``rag_qa``, or
    any example with reference answers) are grouped by task, generator and
    ``Response.prompt_variant``. Per group: the number of responses, refusals
    (responses of at most ``refusal_words`` words or containing one of
    ``refusal_phrases``; also, per labeler, the labels whose category is
    ``refuse``), and per labeler the accuracy = 1 - hallucination rate = share
    of judged responses labelled not hallucinated (in [0, 1], higher = better;
    a refusal counts as whatever the labeler said, so a judge that marks
    refusals as hallucinated lowers accuracy), with a Wilson score interval.
    For each automatic labeler, the difference of its accuracy from the
    reference's on the responses both judged (in [-1, 1]; positive = the
    labeler is more lenient than the reference), with a paired percentile-bootstrap CI.
    Both kinds of interval use the run's bootstrap settings.

    Args:
        reference: The labels the others are compared with.
        labelers: Labeler keys to report; ``None`` = every stored one except
            single annotators (``human:<name>``).
        refusal_words: Responses with at most this many words are refusals. The
            default 0 counts only empty answers: short answers are normal in QA
            (the leaderboard's 5-word rule suits summaries, not "Paris.").
        refusal_phrases: Case-insensitive phrases marking a refusal; by default
            :data:`REFUSAL_PHRASES` (TruthfulQA's "I have no comment", "I don't
            know" and the like).
    """

    labelers: tuple[str, ...] | None = param(
        None, OrNone(SequenceOf(NonEmptyStr())), convert=as_tuple
    )
    refusal_words: int = param(0, Interval(int, 0))
    refusal_phrases: tuple[str, ...] = param(
        REFUSAL_PHRASES, SequenceOf(NonEmptyStr()), convert=as_tuple
    )

    title: ClassVar[str] = "QA accuracy per generator and prompt"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Tabulate accuracy per dataset, task, generator and prompt; see the class docstring."""
        rows: list[dict[str, Any]] = []
        figures: list[StudyFigure] = []
        skipped: list[str] = []
        with_refs = set(data.examples.loc[data.examples["references"].map(len) > 0, "example_id"])
        refuse = data.labels.loc[
            data.labels["category"].fillna("").str.strip().str.lower() == "refuse",
            ["response_id", "labeler"],
        ]
        for ds in data.datasets:
            frame = data.frame(ds)
            qa = frame["task"].isin(QA_TASKS) | frame["example_id"].isin(with_refs)
            if not qa.any():
                skipped.append(f"{ds}: no QA examples (task qa / rag_qa) and no references")
                continue
            sub = frame[qa.to_numpy()]
            verdicts = data.verdicts(ds).loc[sub.index]
            keys = self._labelers(data.labelers_of(ds), verdicts)
            if not keys:
                skipped.append(f"{ds}: no labels on its QA responses")
                continue
            refused = refusal_mask(sub["text"], self.refusal_words, self.refusal_phrases)
            part = self._rows(ds, sub, verdicts[keys], refused, refuse, bootstrap)
            rows += part
            figures.append(self._figure(ds, pd.DataFrame(part), keys))
        table = pd.DataFrame(rows)
        tables = [
            StudyTable("qa_accuracy", table, _CAPTION.format(self.refusal_words, self.reference)),
            StudyTable("qa_accuracy_wide", _wide(table), _WIDE_CAPTION),
        ]
        return self._result(
            _finding(table, self.reference, self._rule()),
            tables=tables,
            figures=figures,
            skipped=skipped,
        )

    def _rule(self) -> str:
        rule = "empty" if self.refusal_words == 0 else f"at most {self.refusal_words} words"
        if self.refusal_phrases:
            rule += " or a refusal phrase"
        return rule

    def _labelers(self, available: list[str], verdicts: pd.DataFrame) -> list[str]:
        keys = [k for k in available if verdicts[k].notna().any()]
        if self.labelers is not None:
            keys = [k for k in keys if k in self.labelers]
        else:
            keys = [k for k in keys if not LabelKey.parse(k).is_annotator]
        # The reference first, then the others in name order.
        return sorted(keys, key=lambda k: (k != self.reference, k))

    def _rows(
        self,
        ds: str,
        sub: pd.DataFrame,
        verdicts: pd.DataFrame,
        refused: np.ndarray,
        refuse: pd.DataFrame,
        bootstrap: Bootstrap,
    ) -> list[dict[str, Any]]:
        has_ref = self.reference in verdicts.columns
        out = []
        groups = sub.reset_index().groupby(_GROUP, sort=True, dropna=False).indices
        for group_key, found in groups.items():
            task, model, prompt = cast(tuple[Any, Any, Any], group_key)
            positions = np.asarray(found)
            ids = sub.index[positions]
            ref = verdicts[self.reference].to_numpy()[positions] if has_ref else None
            base = {
                "dataset": ds,
                "task": task,
                "generator": model,
                "prompt_variant": prompt,
                "n_responses": int(positions.size),
                "n_refusals": int(refused[positions].sum()),
            }
            for key in verdicts.columns:
                v = verdicts[key].to_numpy()[positions]
                judged = ~np.isnan(v)
                n, correct = int(judged.sum()), int((v[judged] == 0).sum())
                low, high = wilson_interval(correct, n, confidence=bootstrap.confidence)
                row = {
                    **base,
                    "labeler": key,
                    "n_refuse_category": int(
                        refuse["response_id"][refuse["labeler"] == key].isin(ids).sum()
                    ),
                    "n_judged": n,
                    "n_correct": correct,
                    "accuracy": correct / n if n else float("nan"),
                    "ci_low": low,
                    "ci_high": high,
                }
                row.update(self._difference(key, v, ref, bootstrap))
                out.append(row)
        return out

    def _difference(
        self, key: str, v: np.ndarray, ref: np.ndarray | None, bootstrap: Bootstrap
    ) -> dict[str, Any]:
        nan = float("nan")
        if ref is None or key == self.reference:
            return {"n_paired": 0, **dict.fromkeys(_DIFF_COLUMNS, nan)}
        paired = ~np.isnan(v) & ~np.isnan(ref)
        diff, low, high = paired_difference_ci(
            v[paired] == 0,
            ref[paired] == 0,
            n_resamples=bootstrap.n_resamples,
            confidence=bootstrap.confidence,
            seed=bootstrap.seed,
        )
        ref_acc = float(np.mean(ref[paired] == 0)) if paired.any() else nan
        return {
            "n_paired": int(paired.sum()),
            "reference_accuracy": ref_acc,
            "accuracy_difference": diff,
            "difference_ci_low": low,
            "difference_ci_high": high,
        }

    def _figure(self, ds: str, table: pd.DataFrame, keys: list[str]) -> StudyFigure:
        # Rows are matched on the generator, task and prompt themselves; the labels
        # drawn shorten the generator to its shortest unambiguous suffix.
        group = ["generator", "task", "prompt_variant"]
        first = table[table["labeler"] == keys[0]].sort_values("accuracy", ascending=False)
        order = pd.MultiIndex.from_frame(first[group].astype(str))
        names = short_names(first["generator"])
        varied = [k for k, c in enumerate(group) if k and table[c].nunique() > 1]
        shown = [" / ".join([names[row[0]], *(row[k] for k in varied)]) for row in order]
        series = {}
        for key in keys:
            part = table[table["labeler"] == key]
            part = part.set_index(pd.MultiIndex.from_frame(part[group].astype(str))).reindex(order)
            series[key] = (part["accuracy"], part["ci_low"], part["ci_high"])
        png = dot_plot(
            shown,
            series,
            xlabel="accuracy = 1 - hallucination rate (Wilson CI)",
            title=f"{ds}: QA accuracy per generator and prompt",
        )
        stem = re.sub(r"[^A-Za-z0-9._=-]+", "_", f"qa_accuracy_{ds}")
        caption = (
            f"Accuracy of each generator / prompt on the QA responses of {ds} under "
            f"{keys[0]} (black) and the other labelers."
        )
        return StudyFigure(stem, png, caption)


_DIFF_COLUMNS = (
    "reference_accuracy",
    "accuracy_difference",
    "difference_ci_low",
    "difference_ci_high",
)
_CAPTION = (
    "Accuracy (share of judged responses labelled not hallucinated, Wilson CI) per task, "
    "generator, prompt variant and labeler. n_refusals: responses of at most {} words (or with a "
    "refusal phrase); n_refuse_category: labels of category 'refuse'. accuracy_difference: "
    "labeler minus {} accuracy on the n_paired responses both judged (paired bootstrap CI)."
)
_WIDE_CAPTION = (
    "The same as one row per generator and prompt (the layout of Janiak et al.'s QA accuracy "
    "table): refusals, then the accuracy under each labeler."
)


def _wide(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty:
        return table
    index = ["dataset", "task", "generator", "prompt_variant", "n_responses", "n_refusals"]
    wide = table.pivot_table(index=index, columns="labeler", values="accuracy", sort=False)
    wide.columns = [f"accuracy {c}" for c in wide.columns]
    return wide.reset_index()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _finding(table: pd.DataFrame, reference: str, rule: str) -> str:
    if table.empty:
        return "No dataset in this run has QA responses with labels; nothing was tabulated."
    sentences = []
    for ds, part in table.groupby("dataset", sort=True):
        groups = part.drop_duplicates(["task", "generator", "prompt_variant"])
        n, refused = int(groups["n_responses"].sum()), int(groups["n_refusals"].sum())
        n_models = groups["generator"].nunique()
        n_prompts = groups["prompt_variant"].nunique()
        text = (
            f"On {ds} ({n:,} QA responses, {_plural(n_models, 'generator')}, "
            f"{_plural(n_prompts, 'prompt')}), {refused:,} ({refused / n:.0%}) count as "
            f"refusals ({rule})"
        )
        ref = part[part["labeler"] == reference]
        if not ref.empty:
            total = ref["n_correct"].sum() / max(ref["n_judged"].sum(), 1)
            text += f" and {reference} labels give an accuracy of {total:.0%}"
            if len(ref) > 1:
                ordered = ref.sort_values("accuracy")
                lo, hi = ordered.iloc[0], ordered.iloc[-1]
                text += (
                    f", from {lo['accuracy']:.0%} ({lo['generator']}) to "
                    f"{hi['accuracy']:.0%} ({hi['generator']})"
                )
        sentences.append(text + ".")
        others = part[part["labeler"] != reference].dropna(subset=["accuracy_difference"])
        if not others.empty:
            sums = (
                others.assign(w=others["accuracy_difference"] * others["n_paired"])
                .groupby("labeler")[["w", "n_paired"]]
                .sum()
            )
            pooled = sums["w"] / sums["n_paired"].where(sums["n_paired"] > 0)
            items = [f"{k} {100 * v:+.1f} points" for k, v in pooled.items()]
            sentences.append(
                f"Against {reference}, the other labelers' accuracy differs by "
                + ", ".join(items)
                + f" (positive = more lenient than {reference})."
            )
    return " ".join(sentences)
