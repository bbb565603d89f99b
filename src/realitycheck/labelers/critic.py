"""FaithCritic (Dziri et al., 2022): a classifier of (knowledge, response) pairs as a labeler.

FaithCritic ("FaithDial: A Faithful Benchmark for Information-Seeking
Dialogue", TACL 2022) is RoBERTa-large fine-tuned to tell whether a
dialogue response is faithful to the knowledge it should rest on; the
authors' training code (``models/critic.py``, ``models/critic_data.py``)
encodes ``tokenizer(knowledge, response)`` and names its two classes
``Entailment`` and ``Hallucination``. Paper 001 (``001_aae339a292aa9c60``,
Table 1, "Critic") uses it as a binary hallucination metric.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from realitycheck.errors import InvalidInputError
from realitycheck.labelers._base import Labeler, labeler
from realitycheck.labelers._checkpoints import Failed, in_batches, load, model_limit
from realitycheck.params import Interval, NonEmptyStr, param, required
from realitycheck.records import Example, Label, Response

if TYPE_CHECKING:
    from realitycheck.backends import CallCache

__all__ = ["Critic", "label_names", "unfaithful_index"]


def label_names(config: Any) -> list[str]:
    """Return a transformers config's label names in output order (``LABEL_<i>`` where unnamed)."""
    id2label = getattr(config, "id2label", None) or {}
    return [str(id2label.get(i, f"LABEL_{i}")) for i in range(int(config.num_labels))]


def unfaithful_index(model: str, names: Sequence[str], unfaithful: str) -> int:
    """Return the output of a classifier whose label is ``unfaithful`` (case and spaces ignored).

    Args:
        model: The model's folder or hub id, for the error message.
        names: The model's label names in output order (``config.id2label``).
        unfaithful: The label name of the unfaithful class.

    Raises:
        InvalidInputError: If the model has fewer than two outputs, or no
            label or more than one is named ``unfaithful``.
    """
    shown = f"The classifier {model!r} (labels {list(names)})"
    if len(names) < 2:
        raise InvalidInputError(
            f"{shown} has {len(names)} output; critic needs one output per class, "
            "a softmax over them, and a class for unfaithful responses.",
            field="model",
        )
    wanted = unfaithful.strip().lower()
    found = [i for i, name in enumerate(names) if name.strip().lower() == wanted]
    if len(found) != 1:
        raise InvalidInputError(
            f"{shown} has {'no' if not found else 'more than one'} label named "
            f"{unfaithful!r}. Name the label of its unfaithful class with the unfaithful "
            f"parameter: one of {list(names)} (a config without names calls its outputs "
            "LABEL_0, LABEL_1…).",
            field="unfaithful",
        )
    return found[0]


@labeler("critic")
@dataclass(frozen=True, kw_only=True)
class Critic(Labeler):
    """FaithCritic: the probability that a classifier of (knowledge, response) finds it unfaithful.

    Pass ``model=McGill-NLP/roberta-large-faithcritic`` (or a local copy).
    The classifier reads the pair (the example's context, the response) as
    its tokenizer writes a text pair (``<s> knowledge </s></s> response
    </s>`` for RoBERTa), truncated longest-first to the model's limit (the
    tokenizer's ``model_max_length``, at most ``max_position_embeddings``);
    the softmax of its logits (float32) gives ``p`` = P(the label named
    ``unfaithful``). The label is looked up, case-insensitively, in the
    model's ``config.id2label`` before any pair is scored; a name the model
    does not have is refused with the model's labels.

    ``score = p`` in [0, 1], higher = more likely hallucinated;
    ``hallucinated = p >= threshold`` (0.5: the argmax of a two-class
    critic); ``category`` is the label of the most probable class and
    ``raw`` keeps every class's probability. Pairs are scored in batches of
    ``batch_size`` of similar length; a batch that fails is scored pair by
    pair, and a response whose pair failed gets ``hallucinated=None`` with
    the error. An example without context or an empty response gets
    ``hallucinated=None`` and an error. Needs the ``hf`` extra.

    Args:
        model: The critic: a local folder or hub id
            (``McGill-NLP/roberta-large-faithcritic``).
        unfaithful: The label (in the model's ``id2label``) of the unfaithful
            class; FaithCritic's is ``Hallucination``.
        threshold: ``p`` at or above which a response is labelled hallucinated.
        device: ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``…
        batch_size: Pairs per forward pass.
    """

    model: str = required(NonEmptyStr(), doc="the critic classifier")
    unfaithful: str = param("Hallucination", NonEmptyStr())
    threshold: float = param(0.5, Interval(float, 0, 1, closed="right"))
    device: str = param("auto", NonEmptyStr(), in_key=False)
    batch_size: int = param(16, Interval(int, 1), in_key=False)
    needs: ClassVar[frozenset[str]] = frozenset({"context"})

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order."""
        plans = [_pair(r, examples.get(r.example_id)) for r in responses]
        wanted = sorted({p for p in plans if isinstance(p, tuple)})
        names, rows = self.probabilities(wanted) if wanted else ([], [])
        found = dict(zip(wanted, rows, strict=True))
        return [
            self._verdict(r, plan, names, found) for r, plan in zip(responses, plans, strict=True)
        ]

    def _verdict(
        self,
        response: Response,
        plan: tuple[str, str] | str,
        names: list[str],
        found: Mapping[tuple[str, str], list[float] | Failed],
    ) -> Label:
        if isinstance(plan, str):
            return self._label(response, None, error=plan)
        row = found[plan]
        if isinstance(row, Failed):
            return self._label(response, None, error=f"the critic failed: {row.error}", failed=True)
        p = row[unfaithful_index(self.model, names, self.unfaithful)]
        top = max(range(len(row)), key=lambda i: row[i])
        return self._label(
            response,
            p >= self.threshold,
            score=p,
            category=names[top],
            raw=" ".join(f"{n}={v:.6f}" for n, v in zip(names, row, strict=True)),
        )

    def probabilities(
        self, pairs: Sequence[tuple[str, str]]
    ) -> tuple[list[str], list[list[float] | Failed]]:
        """Return the model's label names and each (knowledge, response) pair's class probabilities.

        The label named ``unfaithful`` is checked before any pair is scored.

        Raises:
            MissingDependencyError: If torch or transformers is missing.
            InvalidInputError: If the model cannot be loaded or has no such label.
        """
        net, tokenizer = load("classifier", self.model, self.device, owner=self.name)
        names = label_names(net.config)
        unfaithful_index(self.model, names, self.unfaithful)
        limit = model_limit(net, tokenizer)

        def run(batch: list[tuple[str, str]]) -> list[list[float]]:
            import torch

            enc = tokenizer(
                [k for k, _ in batch],
                [r for _, r in batch],
                padding=True,
                truncation=limit is not None,
                max_length=limit,
                return_tensors="pt",
            ).to(net.device)
            with torch.inference_mode():
                logits: Any = net(**enc).logits.float()
            return torch.softmax(logits, dim=-1).cpu().tolist()

        size = lambda pair: len(pair[0]) + len(pair[1])  # noqa: E731
        return names, in_batches(pairs, run, batch_size=self.batch_size, size=size)


def _pair(response: Response, example: Example | None) -> tuple[str, str] | str:
    """Return the (knowledge, response) pair, or why there is none."""
    if example is None:
        return f"example {response.example_id!r} was not given"
    if not example.context.strip():
        return "the example has no context"
    if not response.text.strip():
        return "the response is empty"
    return example.context, response.text
