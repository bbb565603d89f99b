"""Claims: an LLM splits a response into the short factual claims it makes.

Claim-wise checking (seed paper 003, "Benchmarking LLM Faithfulness in RAG
with Evolving Leaderboards", §6.2, after RAGAS and MiniCheck) decomposes a
response into self-contained claims and checks each against the source; the
response is hallucinated when any claim is unsupported. Two kinds of
component split a response this way, with the one prompt and request here:

* the labeler ``claim_judge``, whose LLM then checks every claim;
* the grounding detectors with ``unit=claims`` (``nli_grounding``,
  ``cross_encoder``, ``claim_check``), whose pair classifier scores every
  claim against the source.

The split is one request per response (:func:`split_request` of
:func:`split_prompt`), built the same way by both, so its call-cache key is
the same: with the same LLM and settings the split is paid once, whichever
asks first. The prompt (``prompts/claim_split.v1.txt``) is this project's
own wording; a reply is read by :func:`read_split` (:func:`parse_claims`):
a JSON list of claims, or none, never a guess.

This module sits between ``backends`` (whose requests it builds) and the
components (``labelers``, ``detectors``) that use it.
"""

from realitycheck.claims._split import (
    OTHER_KIND,
    SPLIT_MAX_TOKENS,
    SPLIT_TEMPLATE,
    TASK_KINDS,
    Split,
    json_values,
    parse_claims,
    read_split,
    split_prompt,
    split_request,
    split_schema,
    split_template,
    task_kind,
)

__all__ = [
    "OTHER_KIND",
    "SPLIT_MAX_TOKENS",
    "SPLIT_TEMPLATE",
    "TASK_KINDS",
    "Split",
    "json_values",
    "parse_claims",
    "read_split",
    "split_prompt",
    "split_request",
    "split_schema",
    "split_template",
    "task_kind",
]
