"""Lexical labelers: BLEU, SQuAD token F1 and exact match, knowledge F1.

Each compares the response with the example's references (or, for knowledge
F1, its context), turns the similarity ``s`` in [0, 1] into ``score = 1 - s``
(higher = more likely hallucinated) and labels ``hallucinated = s < threshold``;
``raw`` keeps ``s``. A response with nothing to compare (empty after
normalisation, no reference, no context) gets ``hallucinated=None`` and an
error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from realitycheck.labelers._base import Labeler, labeler
from realitycheck.labelers._similarity import (
    TextSimilarity,
    labels_from_similarity,
    similarity_table,
)
from realitycheck.params import Interval, param
from realitycheck.records import Example, Label, Response
from realitycheck.text import answer_tokens

if TYPE_CHECKING:
    import pyarrow as pa

    from realitycheck.backends import CallCache
    from realitycheck.store import ResponseBatch

__all__ = ["Bleu", "ExactMatch", "KnowledgeF1", "TokenF1", "token_f1"]

_EMPTY = "the response is empty after SQuAD normalisation"
_NO_REFERENCE_WORD = "every reference is empty after SQuAD normalisation"


def _f1(prediction: Counter[str], n_prediction: int, reference: Counter[str], n_ref: int) -> float:
    if n_prediction == 0 or n_ref == 0:
        return float(n_prediction == n_ref)
    common = sum((prediction & reference).values())
    if common == 0:
        return 0.0
    precision, recall = common / n_prediction, common / n_ref
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, reference: str) -> float:
    """Return the SQuAD token F1 of ``prediction`` against one ``reference``.

    Both are normalised by :func:`realitycheck.text.normalize_answer` and split
    on whitespace; F1 is the harmonic mean of the precision and recall of the
    shared tokens (counted with multiplicity). When either side is empty the F1
    is 1 if both are empty and 0 otherwise (the SQuAD 2.0 convention).

    Returns:
        A float in [0, 1], higher = more similar.
    """
    p, r = answer_tokens(prediction), answer_tokens(reference)
    return _f1(Counter(p), len(p), Counter(r), len(r))


class _TokenCounts:
    """SQuAD token counts of each distinct string, computed once."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[Counter[str], int]] = {}

    def __call__(self, text: str) -> tuple[Counter[str], int]:
        found = self._cache.get(text)
        if found is None:
            tokens = answer_tokens(text)
            found = self._cache[text] = (Counter(tokens), len(tokens))
        return found


@labeler("token_f1")
@dataclass(frozen=True, kw_only=True)
class TokenF1(TextSimilarity):
    """SQuAD token F1 against the best reference, thresholded.

    ``score`` is ``1 - F1`` in [0, 1], higher = more likely hallucinated. The
    default threshold 0.5 is a round middle value, not tuned: choose it on
    held-out human labels.

    Args:
        threshold: F1 below which a response is labelled hallucinated, in [0, 1].
    """

    threshold: float = param(0.5, Interval(float, 0, 1))
    similarity_name: ClassVar[str] = "token_f1"

    def text_similarities(
        self, texts: Sequence[str], refs: Sequence[Sequence[str]], errors: list[str]
    ) -> list[float | None]:
        """Return each text's token_f1 to its best reference (``None`` on an error)."""
        counts = _TokenCounts()
        similarities: list[float | None] = []
        for k, text in enumerate(texts):
            prediction, n_prediction = counts(text)
            if not errors[k] and n_prediction == 0:
                errors[k] = _EMPTY
            if not errors[k] and all(counts(r)[1] == 0 for r in refs[k]):
                errors[k] = _NO_REFERENCE_WORD
            if errors[k]:
                similarities.append(None)
                continue
            similarities.append(max(_f1(prediction, n_prediction, *counts(r)) for r in refs[k]))
        return similarities


@labeler("exact_match")
@dataclass(frozen=True, kw_only=True)
class ExactMatch(TextSimilarity):
    """Whether the response equals a reference after SQuAD normalisation.

    The similarity is 1 on a match and 0 otherwise, so ``score`` is 0 (match)
    or 1 (no match), higher = more likely hallucinated; with the default
    threshold 1.0 a response is hallucinated unless it matches.

    Args:
        threshold: Similarity below which a response is labelled hallucinated, in [0, 1].
    """

    threshold: float = param(1.0, Interval(float, 0, 1))
    similarity_name: ClassVar[str] = "exact_match"

    def text_similarities(
        self, texts: Sequence[str], refs: Sequence[Sequence[str]], errors: list[str]
    ) -> list[float | None]:
        """Return each text's exact_match to its best reference (``None`` on an error)."""
        normalized: dict[str, str] = {}

        def norm(text: str) -> str:
            if text not in normalized:
                normalized[text] = " ".join(answer_tokens(text))
            return normalized[text]

        similarities: list[float | None] = []
        for k, text in enumerate(texts):
            prediction = norm(text)
            if not errors[k] and not prediction:
                errors[k] = _EMPTY
            if errors[k]:
                similarities.append(None)
                continue
            similarities.append(float(any(norm(r) == prediction for r in refs[k])))
        return similarities


@labeler("knowledge_f1")
@dataclass(frozen=True, kw_only=True)
class KnowledgeF1(Labeler):
    """SQuAD token F1 between the response and the example's context.

    Measures how much of the response is made of the source's words and how
    much of the source it covers (knowledge F1 of knowledge-grounded dialogue).
    ``score`` is ``1 - F1`` in [0, 1], higher = more likely hallucinated. F1
    against a long context stays small even for a faithful response (its
    recall is low), so a good threshold depends on the context's length. Of
    0.1, 0.2, 0.3 and 0.4, balanced accuracy against human labels was highest
    at 0.4 on BEGIN's Wizard-of-Wikipedia responses (one-sentence knowledge;
    Generic responses left out), at 0.1 on its CMU-DoG and Topical-Chat
    responses (long documents) and at 0.3 on RAGTruth. The default 0.3 is a
    middle value, not tuned to a task: choose the threshold on held-out human
    labels of the same task.

    Args:
        threshold: F1 below which a response is labelled hallucinated, in [0, 1].
    """

    threshold: float = param(0.3, Interval(float, 0, 1))
    needs: ClassVar[frozenset[str]] = frozenset({"context"})

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order."""
        given = [examples.get(r.example_id) for r in responses]
        similarities, errors = _knowledge_f1(
            [r.text for r in responses], ["" if e is None else e.context for e in given]
        )
        for k, (response, example) in enumerate(zip(responses, given, strict=True)):
            if example is None:
                errors[k] = f"example {response.example_id!r} was not given"
        return labels_from_similarity(
            self, responses, similarities, errors, threshold=self.threshold, name="knowledge_f1"
        )

    def label_batch(self, batch: ResponseBatch, *, cache: CallCache | None = None) -> pa.Table:
        """Return the labels of :meth:`label`, from the batch's columns (no record per response)."""
        texts = batch.column("text").to_pylist()
        contexts = [c or "" for c in batch.example_values("context")]
        found, errors = _knowledge_f1(texts, contexts)
        return similarity_table(
            self, batch, found, errors, threshold=self.threshold, name="knowledge_f1"
        )


def _knowledge_f1(
    texts: Sequence[str], contexts: Sequence[str]
) -> tuple[list[float | None], list[str]]:
    """Each text's token F1 to its context (``None`` where it has an error), and the errors."""
    counts = _TokenCounts()
    similarities: list[float | None] = []
    errors: list[str] = []
    for text, context in zip(texts, contexts, strict=True):
        error = ""
        if counts(context)[1] == 0:
            error = "the example has no context"
        elif counts(text)[1] == 0:
            error = _EMPTY
        errors.append(error)
        similarities.append(None if error else _f1(*counts(text), *counts(context)))
    return similarities, errors


@labeler("bleu")
@dataclass(frozen=True, kw_only=True)
class Bleu(TextSimilarity):
    """Sentence BLEU of sacrebleu against all the example's references at once.

    Uses ``sacrebleu.sentence_bleu(response, references)`` with its defaults
    (13a tokenisation, case-sensitive, exponential smoothing, effective n-gram
    order): one multi-reference score, not a maximum over single references.
    The similarity is BLEU / 100 in [0, 1] and ``score`` is ``1 - BLEU / 100``,
    higher = more likely hallucinated. The default threshold 0.1 is a low round
    value, not tuned: choose it on held-out human labels.

    Args:
        threshold: BLEU / 100 below which a response is labelled hallucinated, in [0, 1].
    """

    threshold: float = param(0.1, Interval(float, 0, 1))
    similarity_name: ClassVar[str] = "bleu"

    def text_similarities(
        self, texts: Sequence[str], refs: Sequence[Sequence[str]], errors: list[str]
    ) -> list[float | None]:
        """Return each text's BLEU / 100 against all its references (``None`` on an error).

        Each distinct reference set is tokenised once, into sacrebleu's own
        reference cache (``BLEU(references=...)``), and each distinct text is
        scored once against it, as a one-sentence ``corpus_score``: the same
        statistics and formula as ``sentence_bleu(text, references)``, so the
        same value (TruthfulQA's 22,341 answers share 795 reference sets).
        """
        from sacrebleu.metrics import BLEU

        groups: dict[tuple[str, ...], dict[str, list[int]]] = {}
        for k, text in enumerate(texts):
            if not errors[k] and not text.strip():
                errors[k] = "the response is empty"
            if not errors[k]:
                groups.setdefault(tuple(refs[k]), {}).setdefault(text, []).append(k)
        similarities: list[float | None] = [None] * len(texts)
        for references, rows_of_text in groups.items():
            # effective_order=True: the settings of sacrebleu.sentence_bleu
            metric = BLEU(effective_order=True, references=[[r] for r in references])
            for text, rows in rows_of_text.items():
                value = metric.corpus_score([text], None).score / 100
                for k in rows:
                    similarities[k] = value
        return similarities
