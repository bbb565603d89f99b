"""A sequence-classification fine-tune of any Hugging Face model, optionally with LoRA."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from realitycheck.detectors._base import RunContext, detector
from realitycheck.detectors._supervised import SupervisedDetector, source_text
from realitycheck.encoders.bertscore import require_torch
from realitycheck.errors import InvalidInputError, MissingDependencyError
from realitycheck.params import Interval, NonEmptyStr, param, required
from realitycheck.records import Response

__all__ = ["FineTuned"]

BATCH_SIZE = 8
"""Pairs per optimisation step and per scoring pass."""

_PURPOSE = "Fine-tuning the finetuned detector"


def _peft() -> Any:
    try:
        import peft
    except ImportError:
        raise MissingDependencyError("peft", extra="hf", purpose=f"{_PURPOSE} with LoRA") from None
    return peft


@dataclass(frozen=True)
class _Fitted:
    """A fine-tuned classifier, its tokenizer and the device it sits on."""

    net: Any
    tokenizer: Any
    lora: bool


@detector("finetuned")
@dataclass(frozen=True, kw_only=True)
class FineTuned(SupervisedDetector):
    """A fine-tuned sequence classifier of (source, response) pairs; LoRA optional.

    Per dataset, ``model`` (a local folder or hub id loadable by
    ``AutoModelForSequenceClassification``; a causal LM gets a new, seeded
    2-way head) is fine-tuned on the calibration split with the verdicts of
    ``train_labels`` and scores the test split (see
    :mod:`realitycheck.detectors._supervised`). Each input is the pair
    (source, response): the source is the question and the context
    (:func:`~realitycheck.detectors._supervised.source_text`), and the pair is
    truncated longest-first to ``max_length`` tokens. Training: cross-entropy
    over labels 0 (faithful) / 1 (hallucinated), AdamW at ``learning_rate``,
    ``epochs`` passes over the pairs in a seeded random order, batches of 8.
    With ``lora_rank > 0`` only LoRA adapters of that rank (``peft``,
    ``lora_alpha = 2 * rank``, no dropout) and the classification head are
    trained, as paper 002's SFT detector is. ``value`` is the softmax
    probability of label 1, in [0, 1], higher = more likely hallucinated.

    The weights are saved with ``save_pretrained`` (safetensors) in the run's
    model folder: the whole model, or with LoRA the adapters and head only.
    Needs the ``hf`` extra (torch, transformers; peft for LoRA).

    Args:
        model: The model to fine-tune: a local folder or a hub id.
        lora_rank: LoRA rank; 0 fine-tunes every weight.
        epochs: Passes over the training pairs.
        learning_rate: AdamW's learning rate.
        max_length: Most tokens of a (source, response) pair.
        device: ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``…
        train_labels: The labeler whose verdicts train it (``human``, ``rouge_l``…).
        min_train: Fewest labelled calibration responses of a dataset it trains on.
        seed: Seed of the new head, the dropout and the order of the pairs.
    """

    model: str = required(NonEmptyStr(), doc="the model to fine-tune")
    lora_rank: int = param(0, Interval(int, 0), doc="LoRA rank; 0 = full fine-tune")
    epochs: int = param(3, Interval(int, 1), doc="passes over the training pairs")
    learning_rate: float = param(
        5e-5, Interval(float, 0, 1, closed="right"), doc="AdamW's learning rate"
    )
    max_length: int = param(256, Interval(int, 8), doc="most tokens of a pair")
    device: str = param("auto", NonEmptyStr(), in_key=False, doc="where to train")
    needs: ClassVar[frozenset[str]] = frozenset({"labels"})

    def inputs(self, responses: Sequence[Response], run: RunContext) -> tuple[Any, list[str]]:
        """Return the (source, response) pairs and, per response, an error (``""``: fine)."""
        pairs, errors = [], []
        for r in responses:
            example = run.examples.get(r.example_id)
            pairs.append((source_text(example) if example else "", r.text))
            errors.append("" if example else f"example {r.example_id!r} was not given")
        return pairs, errors

    def _load(self, torch: Any) -> tuple[Any, Any]:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        verbosity = hf_logging.get_verbosity()
        # A causal LM loads with a new head: its load report is expected, not news.
        hf_logging.set_verbosity_error()
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.model)
            net = AutoModelForSequenceClassification.from_pretrained(
                self.model, num_labels=2, ignore_mismatched_sizes=True, dtype=torch.float32
            )
        except (OSError, ValueError) as exc:
            raise InvalidInputError(
                f"finetuned cannot load the model {self.model!r}: {exc}", field="model"
            ) from None
        finally:
            hf_logging.set_verbosity(verbosity)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        net.config.pad_token_id = tokenizer.pad_token_id
        return net, tokenizer

    def _device(self, torch: Any) -> str:
        if self.device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        return self.device

    def _encode(self, tokenizer: Any, pairs: Sequence[tuple[str, str]], device: str) -> Any:
        batch = tokenizer(
            [s for s, _ in pairs],
            [t for _, t in pairs],
            truncation=True,
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )
        return {k: v.to(device) for k, v in batch.items()}

    def fit(self, inputs: Any, y: np.ndarray) -> Any:
        """Fine-tune a fresh copy of ``model`` on the pairs; return it ready to score."""
        torch = require_torch(_PURPOSE)
        device = self._device(torch)
        devices = [torch.cuda.current_device()] if device.startswith("cuda") else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(self.seed)
            net, tokenizer = self._load(torch)
            if self.lora_rank:
                peft = _peft()
                config = peft.LoraConfig(
                    task_type=peft.TaskType.SEQ_CLS,
                    r=self.lora_rank,
                    lora_alpha=2 * self.lora_rank,
                    lora_dropout=0.0,
                )
                with warnings.catch_warnings():
                    # peft reads the model's `is_gradient_checkpointing`, which
                    # transformers 5.24 deprecates (a FutureWarning the user cannot act on).
                    warnings.filterwarnings(
                        "ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning
                    )
                    net = peft.get_peft_model(net, config)
            net.to(device).train()
            trainable = [p for p in net.parameters() if p.requires_grad]
            optimiser = torch.optim.AdamW(trainable, lr=self.learning_rate)
            order = torch.Generator().manual_seed(self.seed)
            labels = torch.as_tensor(y.astype(np.int64))
            for _ in range(self.epochs):
                for rows in torch.randperm(len(inputs), generator=order).split(BATCH_SIZE):
                    batch = self._encode(tokenizer, [inputs[i] for i in rows.tolist()], device)
                    loss = net(**batch, labels=labels[rows].to(device)).loss
                    loss.backward()
                    optimiser.step()
                    optimiser.zero_grad()
        net.eval()
        return _Fitted(net=net, tokenizer=tokenizer, lora=bool(self.lora_rank))

    def predict(self, model: Any, inputs: Any) -> np.ndarray:
        """Return the softmax probability of label 1 (hallucinated) of each pair."""
        torch = require_torch(_PURPOSE)
        fitted: _Fitted = model
        device = str(next(fitted.net.parameters()).device)
        out = []
        with torch.no_grad():
            for start in range(0, len(inputs), BATCH_SIZE):
                batch = self._encode(fitted.tokenizer, inputs[start : start + BATCH_SIZE], device)
                logits = fitted.net(**batch).logits.float()
                out.append(torch.softmax(logits, dim=-1)[:, 1].cpu().numpy())
        return np.concatenate(out).astype(float) if out else np.empty(0)

    def save(self, model: Any, folder: Path) -> dict[str, np.ndarray]:
        """Save the model (or the LoRA adapters and head) and tokenizer; return the weights."""
        fitted: _Fitted = model
        fitted.net.save_pretrained(folder)
        fitted.tokenizer.save_pretrained(folder)
        if fitted.lora:
            state = _peft().get_peft_model_state_dict(fitted.net)
        else:
            state = fitted.net.state_dict()
        return {k: v.detach().float().cpu().numpy() for k, v in state.items()}
