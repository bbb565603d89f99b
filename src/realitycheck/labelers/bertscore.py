"""BERTScore labelers: the response against the references, or against the knowledge.

Both compute BERTScore (Zhang et al., 2020) with :func:`realitycheck.encoders.bertscore.bertscore`
from the token embeddings of one layer of a local encoder: no idf weighting,
no baseline rescaling, CLS and SEP in the maxima but not in the averages,
texts cut at the tokenizer's ``model_max_length`` (the module docstring of
:mod:`realitycheck.encoders.bertscore` states each choice). The values equal those of
the ``bert-score`` package on the same model and layer. The response is the
candidate: ``precision`` says how much of the response the other text
supports, ``recall`` how much of the other text the response covers.

``score = 1 - s`` for the chosen measure ``s`` (higher = more likely
hallucinated), ``hallucinated = s < threshold``, and ``raw`` keeps all three
numbers, ``P=… R=… F1=…``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from realitycheck.labelers._base import Labeler, labeler
from realitycheck.labelers._similarity import labels_from_similarity, references_of
from realitycheck.params import InstanceOf, Interval, NonEmptyStr, OneOf, param
from realitycheck.records import Example, Label, Response

if TYPE_CHECKING:
    from realitycheck.backends import CallCache

__all__ = ["BERTScore", "KnowledgeBERTScore"]

Measure = Literal["precision", "recall", "f1"]
_COLUMN = {"precision": 0, "recall": 1, "f1": 2}


@dataclass(frozen=True, kw_only=True)
class _BERTScoreLabeler(Labeler):
    """BERTScore of the response against texts of its example, thresholded (not registered).

    Its subclasses say what the response is compared with; both take these parameters.

    Args:
        model: Folder or hub id of a transformers encoder ("" = the bundled
            all-MiniLM-L6-v2 of the ``embed`` extra).
        layer: Hidden layer whose states are the token embeddings (0 =
            embeddings, -1 = last); checked against the model's config
            before any text is embedded.
        measure: ``precision``, ``recall`` or ``f1``: which one is thresholded.
        threshold: Value of the measure below which a response is labelled hallucinated.
        device: ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``…
        batch_size: Texts per forward pass.
    """

    model: str = param("", InstanceOf(str))
    layer: int = param(-1, Interval(int, -1))
    measure: Measure = param("f1", OneOf(Measure))
    threshold: float = param(0.5, Interval(float, -1, 1))
    device: str = param("auto", NonEmptyStr(), in_key=False)
    batch_size: int = param(32, Interval(int, 1), in_key=False)

    def _others(self, response: Response, example: Example) -> tuple[tuple[str, ...], str]:
        """Return the texts to compare ``response`` with, or why there are none."""
        raise NotImplementedError

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order."""
        from realitycheck.encoders.bertscore import bertscore, check_layer, encoder_path

        others: list[tuple[str, ...]] = []
        errors: list[str] = []
        for response in responses:
            example = examples.get(response.example_id)
            texts, error = (
                ((), f"example {response.example_id!r} was not given")
                if example is None
                else self._others(response, example)
            )
            if not error and not response.text.strip():
                error = "the response is empty"
            others.append(texts)
            errors.append(error)
        todo = [k for k, error in enumerate(errors) if not error]
        found: list[float | None] = [None] * len(responses)  # the measure, None on an error
        raw = [""] * len(responses)
        if todo:
            model = encoder_path(self.model)
            check_layer(model, self.layer, owner=self.name)
            values = bertscore(
                [responses[k].text for k in todo],
                [others[k] for k in todo],
                model=model,
                layer=self.layer,
                device=self.device,
                batch_size=self.batch_size,
            )
            for k, (p, r, f1) in zip(todo, values.tolist(), strict=True):
                found[k] = (p, r, f1)[_COLUMN[self.measure]]
                raw[k] = f"P={p:.6f} R={r:.6f} F1={f1:.6f}"
        return labels_from_similarity(
            self, responses, found, errors, threshold=self.threshold, name=self.measure, raw=raw
        )


@labeler("bertscore")
@dataclass(frozen=True, kw_only=True)
class BERTScore(_BERTScoreLabeler):
    """BERTScore of the response against the closest reference answer.

    With several references, precision, recall and F1 are each the maximum
    over them (as in ``bert-score``). The similarity ``s`` (the chosen
    measure) is a cosine average in [-1, 1], near 1 for a paraphrase;
    ``score = 1 - s`` in [0, 2], higher = more likely hallucinated, and
    ``hallucinated = s < threshold``. The default encoder is the bundled
    all-MiniLM-L6-v2, last layer; the default threshold 0.5 is a round value,
    not tuned: choose it on held-out human labels. Without rescaling,
    unrelated texts still score well above 0. An empty response or an
    example without references gets ``hallucinated=None`` and an error.
    """

    needs: ClassVar[frozenset[str]] = frozenset({"references"})

    def _others(self, response: Response, example: Example) -> tuple[tuple[str, ...], str]:
        refs, errors = references_of([response], {example.example_id: example})
        return refs[0], errors[0]


@labeler("k_bertscore")
@dataclass(frozen=True, kw_only=True)
class KnowledgeBERTScore(_BERTScoreLabeler):
    """K-BERTScore: BERTScore of the response against the example's knowledge (its context).

    As used for knowledge-grounded dialogue (Dziri et al., 2022) and in the
    metric comparison of ``001_aae339a292aa9c60``: the context (the knowledge
    snippet, the source document) is the reference. The default measure is
    precision, how much of the response the knowledge supports: recall and
    F1 fall with the context's length even for a faithful response (a
    one-sentence answer covers little of a long document). ``score = 1 -
    s`` in [0, 2], higher = more likely hallucinated, ``hallucinated = s <
    threshold``; the default 0.5 is a round value, not tuned. Contexts longer
    than the tokenizer's ``model_max_length`` are cut there (512 word pieces
    for MiniLM). An empty response or an example without context gets
    ``hallucinated=None`` and an error.
    """

    measure: Measure = param("precision", OneOf(Measure))
    needs: ClassVar[frozenset[str]] = frozenset({"context"})

    def _others(self, response: Response, example: Example) -> tuple[tuple[str, ...], str]:
        if not example.context.strip():
            return (), "the example has no context"
        return (example.context,), ""
