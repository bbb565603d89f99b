"""UniEval's Boolean-question evaluator (Zhong et al., 2022) as a faithfulness labeler.

UniEval ("Towards a Unified Multi-Dimensional Evaluator for Text
Generation", EMNLP 2022) casts each quality dimension as a yes/no question
put to a fine-tuned T5 and reads the answer from the first decoder step:
``s = P("Yes") / (P("Yes") + P("No"))`` of the decoder's next-token
distribution (the authors' ``metric/scorer.py``). Paper 001
(``001_aae339a292aa9c60``, Table 1) uses two of its dimensions as
hallucination metrics: *consistency* (factual alignment of a claim with a
document; ``MingZhong/unieval-fact``, or ``MingZhong/unieval-sum``) and
*groundedness* (a dialogue response against its knowledge;
``MingZhong/unieval-dialog``). The question templates are package data,
``prompts/unieval_consistency.v1.txt`` and
``prompts/unieval_groundedness.v1.txt``: the checkpoints were fine-tuned on
exactly these inputs (the authors' ``utils.add_question``), so their words
are kept as the models expect them; ``</s>`` in them is T5's separator.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from realitycheck.errors import InvalidInputError
from realitycheck.labelers._base import Labeler, labeler
from realitycheck.labelers._checkpoints import Failed, in_batches, load
from realitycheck.labelers._judge import load_template, prompt_sha256_param
from realitycheck.labelers._similarity import labels_from_similarity
from realitycheck.params import Interval, NonEmptyStr, OneOf, param, required
from realitycheck.records import Example, Label, Response
from realitycheck.text import split_sentences

if TYPE_CHECKING:
    from realitycheck.backends import CallCache

__all__ = ["TEMPLATES", "UniEval", "unieval_input"]

Dimension = Literal["consistency", "groundedness"]
TEMPLATES = {
    "consistency": "unieval_consistency.v1.txt",
    "groundedness": "unieval_groundedness.v1.txt",
}
"""The question template of each dimension (``$claim``/``$document``, ``$response``/``$fact``)."""


def unieval_input(dimension: Dimension, text: str, source: str) -> str:
    """Return the Boolean question UniEval's evaluator reads for ``text`` against ``source``.

    ``text`` is a claim (one sentence of the response) for ``consistency``
    and the whole response for ``groundedness``; ``source`` is the document
    or the knowledge. Both are inserted as they are (the model was trained
    on raw text, not on quoted strings).
    """
    template = string.Template(load_template(TEMPLATES[dimension]).rstrip("\n"))
    if dimension == "consistency":
        return template.substitute(claim=text, document=source)
    return template.substitute(response=text, fact=source)


@labeler("unieval")
@dataclass(frozen=True, kw_only=True)
class UniEval(Labeler):
    """UniEval's T5 evaluator: one minus P(Yes) / (P(Yes) + P(No)) to "is this consistent?".

    The question (``prompts/unieval_<dimension>.v1.txt``) pairs the response
    with the example's context (the source document or the knowledge) and
    goes to the encoder, cut at ``max_length`` tokens (the end of the source
    is what is cut, as UniEval does); the decoder takes one step from its
    start token, and ``s = P(Yes) / (P(Yes) + P(No))`` of that step's
    next-token distribution (``sigmoid(z_Yes - z_No)`` of its logits, the
    same number), in [0, 1].

    * ``consistency`` (pass ``model=MingZhong/unieval-fact``, or
      ``MingZhong/unieval-sum``): as UniEval's ``FactEvaluator``, the
      response is split into sentences, each is asked about against the
      whole source, and ``s`` is their mean. Sentences are
      :func:`realitycheck.text.split_sentences`, not NLTK's Punkt (which
      UniEval uses), so an abbreviation may split differently.
    * ``groundedness`` (pass ``model=MingZhong/unieval-dialog``): as
      UniEval's ``DialogEvaluator``, the whole response is one question
      against the knowledge ("fact").

    ``score = 1 - s`` in [0, 1], higher = more likely hallucinated;
    ``hallucinated = s < threshold`` (the default 0.5 is where the model
    prefers "No", not tuned); ``raw`` keeps ``s`` and, for consistency, each
    sentence's value. Inputs are scored in batches of ``batch_size`` (of
    similar length) in float32; a batch that fails is scored input by input,
    and a response whose input failed gets ``hallucinated=None`` with the
    error. An example without context or an empty response gets
    ``hallucinated=None`` and an error. Needs the ``hf`` extra.

    Args:
        model: The UniEval checkpoint: a local folder or hub id
            (``MingZhong/unieval-fact`` for consistency,
            ``MingZhong/unieval-dialog`` for groundedness).
        dimension: ``consistency`` (sentence by sentence against the
            document) or ``groundedness`` (the response against the knowledge).
        threshold: ``s`` below which a response is labelled hallucinated, in [0, 1].
        max_length: Most encoder tokens of one question (UniEval's default 1024).
        device: ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``…
        batch_size: Questions per forward pass (UniEval's default 8).
    """

    model: str = required(NonEmptyStr(), doc="the UniEval checkpoint")
    dimension: Dimension = param("consistency", OneOf(Dimension))
    threshold: float = param(0.5, Interval(float, 0, 1))
    max_length: int = param(1024, Interval(int, 8))
    prompt_sha256: str = prompt_sha256_param(tuple(TEMPLATES.values()))
    device: str = param("auto", NonEmptyStr(), in_key=False)
    batch_size: int = param(8, Interval(int, 1), in_key=False)
    needs: ClassVar[frozenset[str]] = frozenset({"context"})

    def _questions(self, response: Response, example: Example | None) -> list[str] | str:
        """Return the response's questions, or why it has none."""
        if example is None:
            return f"example {response.example_id!r} was not given"
        if not example.context.strip():
            return "the example has no context"
        text = response.text.strip()
        if not text:
            return "the response is empty"
        parts = split_sentences(text) if self.dimension == "consistency" else [text]
        return [unieval_input(self.dimension, part, example.context) for part in parts]

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order."""
        plans = [self._questions(r, examples.get(r.example_id)) for r in responses]
        wanted = sorted({q for plan in plans if not isinstance(plan, str) for q in plan})
        found = dict(zip(wanted, self.consistency(wanted), strict=True)) if wanted else {}
        return [self._verdict(r, plan, found) for r, plan in zip(responses, plans, strict=True)]

    def _verdict(
        self, response: Response, plan: list[str] | str, found: Mapping[str, float | Failed]
    ) -> Label:
        if isinstance(plan, str):
            return self._label(response, None, error=plan)
        parts = [found[q] for q in plan]
        numbers = [p for p in parts if not isinstance(p, Failed)]
        if len(numbers) < len(parts):
            error = next(p.error for p in parts if isinstance(p, Failed))
            return self._label(response, None, error=f"the evaluator failed: {error}", failed=True)
        s = sum(numbers) / len(numbers)
        raw = f"{self.dimension}={s:.6f}"
        if self.dimension == "consistency":
            raw += f" per_sentence={','.join(f'{x:.6f}' for x in numbers)}"
        (label,) = labels_from_similarity(
            self, [response], [s], [""], threshold=self.threshold, name=self.dimension, raw=[raw]
        )
        return label

    def consistency(self, questions: Sequence[str]) -> list[float | Failed]:
        """Return ``P(Yes) / (P(Yes) + P(No))`` of each question, or a :class:`Failed`.

        Raises:
            MissingDependencyError: If torch or transformers is missing.
            InvalidInputError: If the model cannot be loaded, or its tokenizer
                does not write ``Yes`` and ``No`` as one token each.
        """
        net, tokenizer = load("seq2seq", self.model, self.device, owner=self.name)
        yes, no = (_one_token(tokenizer, word, self.model) for word in ("Yes", "No"))
        start = net.config.decoder_start_token_id
        if start is None:
            raise InvalidInputError(
                f"unieval: the model {self.model!r} has no decoder_start_token_id in its config.",
                field="model",
            )

        def run(batch: list[str]) -> list[float]:
            import torch

            enc = tokenizer(
                batch,
                max_length=self.max_length,
                truncation=True,
                padding=True,
                return_tensors="pt",
            ).to(net.device)
            first = torch.full((len(batch), 1), int(start), dtype=torch.long, device=net.device)
            with torch.inference_mode():
                logits = net(**enc, decoder_input_ids=first).logits[:, 0, :].float()
            return torch.sigmoid(logits[:, yes] - logits[:, no]).cpu().tolist()

        return in_batches(questions, run, batch_size=self.batch_size, size=len)


def _one_token(tokenizer: Any, word: str, model: str) -> int:
    """Return the id of ``word`` as the decoder writes it, which must be one token."""
    ids = tokenizer(word, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise InvalidInputError(
            f"unieval: the tokenizer of {model!r} writes {word!r} as {len(ids)} tokens "
            f"({ids}); UniEval reads it as one token of the first decoder step.",
            field="model",
        )
    return int(ids[0])
