"""What is known about each shipped dataset, and the statistics measured from a run.

Some properties of a benchmark cannot be measured from its records (were the
responses written by the models unprompted, or edited to inject errors?); for
the datasets realitycheck ships they are recorded here with their source. A
user's dataset gets "unknown" for them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from realitycheck.store import RunData

__all__ = [
    "FACTS",
    "DatasetFacts",
    "benchmark_stats",
    "context_chars",
    "domain_values",
    "meta_of",
]

UNKNOWN_MODELS = frozenset({"", "unknown"})
"""Model names that say the generator was not recorded."""

GENERIC_DOMAIN_KEYS = ("domain", "topic", "category")
"""Meta keys read as the domain of a user's dataset (examples first, then responses)."""


@dataclass(frozen=True)
class DatasetFacts:
    """Documented facts about one dataset.

    Attributes:
        organic: ``yes`` / ``partial`` / ``no`` / ``unknown``: are the responses the
            models' own generations, with no error injected or prompted for?
        organic_evidence: Why, with the source.
        domain_key: ``("example" | "response", meta key)`` holding the domain, or None.
        domain_meaning: What a domain value is for this dataset.
    """

    organic: str
    organic_evidence: str
    domain_key: tuple[str, str] | None
    domain_meaning: str


FACTS: dict[str, DatasetFacts] = {
    "ragtruth": DatasetFacts(
        "yes",
        "responses of six LLMs to the task prompts, annotated as generated; the corpus "
        "calls them naturally generated responses (ParticleMedia/RAGTruth README; Niu et "
        "al., 2024)",
        ("example", "ragtruth_task"),
        "the task's source corpus: QA = MS MARCO web passages (paper 002), summary = news "
        "articles, data2txt = business records (RAGTruth paper; data README)",
    ),
    "faithbench": DatasetFacts(
        "yes",
        "summaries written by 10 LLMs of 8 families, kept where detectors disagreed, not "
        "edited (FaithBench, Bao et al., NAACL 2025; vectara/FaithBench README)",
        None,
        "unknown: the release does not record the articles' source or topic",
    ),
    "halueval_general": DatasetFacts(
        "yes",
        "ChatGPT's own answers to user queries, annotated by humans; unlike HaluEval's "
        "QA / dialogue / summary parts, no hallucinated answer was generated on purpose "
        "(HaluEval, Li et al., EMNLP 2023)",
        None,
        "unknown: the user queries carry no topic",
    ),
    "truthfulqa": DatasetFacts(
        "partial",
        "the judged answers pool model outputs with human-written reference answers and do "
        "not say which is which (data README: 'model answers and reference answers')",
        ("example", "category"),
        "the TruthfulQA question category (Lin et al., ACL 2022)",
    ),
    "begin": DatasetFacts(
        "yes",
        "responses of four knowledge-grounded dialogue systems (gpt2, t5, ctrl, doha) "
        "judged by humans (BEGIN, Dziri et al., TACL 2022; data README)",
        ("example", "source"),
        "the dialogue corpus: WoW (Wikipedia topics), CMU-DoG (movies), TopicalChat "
        "(several topics)",
    ),
}


def meta_of(column: pd.Series) -> list[dict[str, Any]]:
    """Parse a column of JSON meta texts (empty or invalid text gives ``{}``)."""
    out = []
    for text in column.tolist():
        try:
            value = json.loads(text) if isinstance(text, str) and text else {}
        except json.JSONDecodeError:
            value = {}
        out.append(value if isinstance(value, dict) else {})
    return out


def domain_values(data: RunData, dataset: str) -> tuple[pd.Series, str]:
    """Return each response's domain (None where unknown) and what a domain means.

    Known datasets use the meta key listed in :data:`FACTS`; any other dataset
    uses the first of ``domain``, ``topic``, ``category`` found in its examples'
    (then its responses') meta.
    """
    rows = data.frame(dataset)
    # Only this dataset's examples: parsing every example's meta of the run, once per
    # dataset, was most of the time.
    examples = data.examples[data.examples["example_id"].isin(set(rows["example_id"]))]
    examples = examples.set_index("example_id")
    example_meta = dict(
        zip(examples.index, meta_of(examples["meta"].astype("object")), strict=True)
    )
    per_example = [example_meta.get(e, {}) for e in rows["example_id"]]
    per_response = meta_of(rows["meta"].astype("object"))
    facts = FACTS.get(dataset)
    if facts is not None:
        if facts.domain_key is None:
            return pd.Series(
                [None] * len(rows), index=rows.index, dtype=object
            ), facts.domain_meaning
        where, key = facts.domain_key
        metas = per_example if where == "example" else per_response
        values = [m.get(key) for m in metas]
        return pd.Series(values, index=rows.index, dtype=object), facts.domain_meaning
    for where, metas in (("example", per_example), ("response", per_response)):
        for key in GENERIC_DOMAIN_KEYS:
            values = [m.get(key) for m in metas]
            if any(v not in (None, "") for v in values):
                return pd.Series(values, index=rows.index, dtype=object), f"{where} meta '{key}'"
    return pd.Series([None] * len(rows), index=rows.index, dtype=object), "unknown"


def context_chars(data: RunData, rows: pd.DataFrame) -> npt.NDArray[np.float64]:
    """The context length in characters of each response in ``rows``, taken from its example.

    Args:
        data: The run.
        rows: Responses with an ``example_id`` column, e.g. ``data.frame(dataset)``.

    Returns:
        Shape (len(rows),), in the order of ``rows``; 0 where the example has
        no (or an empty) context, NaN where it is not in the run.
    """
    examples = data.examples[["example_id", "context_chars"]]
    merged = rows[["example_id"]].merge(examples, on="example_id", how="left")
    return merged["context_chars"].to_numpy(dtype=float)


def benchmark_stats(
    data: RunData,
    dataset: str,
    reference: str,
    *,
    rows: pd.DataFrame | None = None,
    context: npt.NDArray[np.float64] | None = None,
) -> pd.DataFrame:
    """One row per dataset (``task = all``) and per task when there are several.

    Columns: samples (responses), examples, share of responses with a context,
    mean / max context length in characters over responses with one,
    hallucination rate under ``reference`` and how many responses it labels,
    number and names of generators (unrecorded names such as ``unknown`` not
    counted), number of domains and what a domain is. ``rows`` and
    ``context`` are ``data.frame(dataset)`` and its :func:`context_chars`,
    when the caller has them.
    """
    rows = data.frame(dataset) if rows is None else rows
    context = context_chars(data, rows) if context is None else context
    verdicts = data.verdicts(dataset)
    y = verdicts[reference].to_numpy() if reference in verdicts else np.full(len(rows), np.nan)
    domains, meaning = domain_values(data, dataset)
    tasks = sorted(rows["task"].dropna().unique())
    out = []
    for task in ["all", *tasks] if len(tasks) > 1 else ["all"]:
        mask = np.ones(len(rows), bool) if task == "all" else (rows["task"] == task).to_numpy()
        ctx = context[mask]
        has = ~np.isnan(ctx) & (ctx > 0)
        labelled = y[mask][~np.isnan(y[mask])]
        models = sorted(set(rows["model"][mask].dropna()) - UNKNOWN_MODELS)
        known = [d for d in domains[mask] if d not in (None, "")]
        out.append(
            {
                "dataset": dataset,
                "task": task,
                "samples": int(mask.sum()),
                "examples": int(rows["example_id"][mask].nunique()),
                "share_with_context": float(has.mean()) if mask.any() else np.nan,
                "mean_context_chars": float(ctx[has].mean()) if has.any() else np.nan,
                "max_context_chars": float(ctx[has].max()) if has.any() else np.nan,
                "hallucination_rate": float(labelled.mean()) if labelled.size else np.nan,
                "n_labelled": int(labelled.size),
                "n_generators": len(models),
                "generators": ", ".join(models) if models else "not recorded",
                "n_domains": len(set(known)) if known else np.nan,
                "domain": meaning,
            }
        )
    return pd.DataFrame(out)
