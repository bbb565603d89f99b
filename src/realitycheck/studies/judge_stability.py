"""LLM judges as measured things: how often a judge agrees with itself across repeats.

The study reads what every judge writes in a label's ``raw`` JSON (see
:class:`realitycheck.labelers.Judge`: the ``replies``, their parsed
``verdicts`` and the ``agreement`` rate); it calls no model. A run without
judges gives an empty table and one skipped line per dataset.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap, require_module
from realitycheck.errors import InvalidInputError
from realitycheck.store import RunData, StudyResult, StudyTable
from realitycheck.studies import Study, fmt, study

__all__ = ["JudgeStability", "fleiss_kappa_of", "raw_json"]

_STABILITY_COLUMNS = [
    "dataset",
    "labeler",
    "repeats",
    "n",
    "n_excluded",
    "unanimous_share",
    "mean_agreement",
    "fleiss_kappa",
    "categories",
]


def raw_json(text: Any) -> dict[str, Any]:
    """The JSON object of a label's ``raw``, or ``{}`` when it holds none."""
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def fleiss_kappa_of(verdicts: list[list[str]]) -> float:
    """Fleiss' kappa of items (rows) rated by the same number of raters into named categories.

    Lies in [-1, 1] (1 = every item's raters agree; 0 = agreement at chance).
    NaN when there are no items or only one category occurs.

    Raises:
        InvalidInputError: If the rows do not all have the same length >= 2.
        MissingDependencyError: statsmodels is not installed.
    """
    lengths = {len(row) for row in verdicts}
    if len(lengths) > 1 or (lengths and lengths.pop() < 2):
        raise InvalidInputError(
            "The 'verdicts' parameter of fleiss_kappa_of must be rows of one length >= 2. "
            f"Got lengths {sorted({len(row) for row in verdicts})} instead."
        )
    categories = sorted({v for row in verdicts for v in row})
    if len(categories) < 2:
        return float("nan")
    inter_rater = require_module("statsmodels.stats.inter_rater", "statsmodels", "Fleiss' kappa")
    table = np.array([[row.count(c) for c in categories] for row in verdicts], dtype=float)
    return float(inter_rater.fleiss_kappa(table, method="fleiss"))


@study("judge_stability")
@dataclass(frozen=True, kw_only=True)
class JudgeStability(Study):
    """How often each LLM judge gives the same verdict when asked the same question again.

    For every judge whose labels carry repeated replies (``repeats`` > 1, read
    from ``raw["verdicts"]``), per dataset: the share of responses whose
    repeats all gave one verdict (``unanimous_share``, in [0, 1]), the mean
    agreement rate (share of the repeats that gave the deciding verdict, in
    [1 / repeats, 1]), and Fleiss' kappa across repeats (responses as items,
    repeats as raters, the judge's verdict categories, ``invalid`` included;
    in [-1, 1], NaN with one category only). Higher is more stable for all
    three. ``n`` counts the responses used; a label without verdicts (a
    backend failure, a response that could not be judged) or with another
    number of repeats than the judge's usual one is counted in ``n_excluded``.
    The reference plays no part.
    """

    title: ClassVar[str] = "Judge stability: agreement of a judge with itself across repeats"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Measure the repeat agreement of every judge on every dataset."""
        rows, skipped = [], []
        labels = data.labels.merge(
            data.responses[["response_id", "dataset"]], on="response_id", how="inner"
        )
        for dataset in data.datasets:
            mine = labels[labels["dataset"] == dataset]
            found = 0
            for labeler, group in mine.groupby("labeler", sort=True):
                # Only a judge's raw holds "verdicts"; other labelers' raw is not parsed.
                raws = [
                    raw_json(t) for t in group["raw"] if isinstance(t, str) and '"verdicts"' in t
                ]
                verdicts = [r["verdicts"] for r in raws if isinstance(r.get("verdicts"), list)]
                if not verdicts:
                    continue  # not a judge
                lengths = Counter(len(v) for v in verdicts)
                repeats = max(lengths, key=lambda n: (lengths[n], n))
                if repeats < 2:
                    skipped.append(f"{dataset}: {labeler} asks once per response (repeats = 1)")
                    continue
                found += 1
                used = [[str(x) for x in v] for v in verdicts if len(v) == repeats]
                agreement = [max(Counter(v).values()) / repeats for v in used]
                rows.append(
                    {
                        "dataset": dataset,
                        "labeler": labeler,
                        "repeats": repeats,
                        "n": len(used),
                        "n_excluded": len(group) - len(used),
                        "unanimous_share": float(np.mean([len(set(v)) == 1 for v in used])),
                        "mean_agreement": float(np.mean(agreement)),
                        "fleiss_kappa": fleiss_kappa_of(used),
                        "categories": ", ".join(sorted({x for v in used for x in v})),
                    }
                )
            if not found and not any(s.startswith(f"{dataset}: ") for s in skipped):
                skipped.append(f"{dataset}: no judge labels with repeated replies")
        table = pd.DataFrame(rows, columns=_STABILITY_COLUMNS)
        return self._result(
            _stability_finding(table),
            tables=[
                StudyTable(
                    "stability",
                    table,
                    "Per judge and dataset: share of responses whose repeats are unanimous, mean "
                    "agreement rate (share of repeats giving the deciding verdict), and Fleiss' "
                    "kappa across repeats (responses as items, repeats as raters, verdict "
                    "categories). Higher = more stable; n = responses used.",
                )
            ],
            skipped=skipped,
        )


def _stability_finding(table: pd.DataFrame) -> str:
    if table.empty:
        return "No judge in this run asked the same question more than once, so none was measured."
    worst = table.sort_values(["mean_agreement", "unanimous_share", "labeler"]).iloc[0]
    return (
        f"The least stable judge is {worst['labeler']} on {worst['dataset']}: its "
        f"{worst['repeats']} repeats agree unanimously on {worst['unanimous_share']:.0%} of "
        f"{worst['n']} responses (mean agreement {fmt(worst['mean_agreement'])}, Fleiss' kappa "
        f"{fmt(worst['fleiss_kappa'])})."
    )
