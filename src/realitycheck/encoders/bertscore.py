"""BERTScore (Zhang et al., 2020) from the token embeddings of a local Hugging Face encoder.

For a candidate ``x̂`` (the text judged) and a reference ``x`` (the gold text or
the knowledge), each tokenised with the model's special tokens and embedded
with the hidden states of one layer, every token vector is L2-normalised and

* recall    ``R = (1/|x|)  sum_{x_i in x}   max_{x̂_j in x̂} x_i . x̂_j``
* precision ``P = (1/|x̂|) sum_{x̂_j in x̂} max_{x_i in x}   x_i . x̂_j``
* ``F1 = 2 P R / (P + R)``

(Zhang et al. 2020, eq. 1-3). The choices follow the ``bert-score`` package
(0.3.13) so that the values equal its ``score(..., model_type=FOLDER,
num_layers=LAYER)`` on the same model:

* **idf**: off; every token weighs the same, except the tokenizer's CLS and
  SEP tokens, which take part in the maxima but weigh 0 in the averages.
* **layer**: ``hidden_states[layer]`` of ``AutoModel`` (0 = the embedding
  layer); for BERT-like encoders that is the output of the model cut after
  ``layer`` blocks, which is what ``bert-score`` uses. ``-1`` = the last layer.
* **baseline rescaling**: none. ``bert-score``'s rescaling is the affine map
  ``(s - b) / (1 - b)`` with a baseline ``b`` measured per model on Common
  Crawl; a local model has no such baseline. It changes no ranking.
* **length**: texts are cut at the tokenizer's ``model_max_length``.

Models are loaded once per process (:func:`load_encoder`); nothing is
downloaded unless ``model`` is a hub id missing from the local cache. An empty
``model`` is the all-MiniLM-L6-v2 encoder bundled by the ``embed`` extra
(:func:`encoder_path`). Needs the ``hf`` extra (torch, transformers).

One difference from ``bert-score`` remains, on purpose: ``bert-score`` pads a
batch and lets the padded positions take part in the maxima with a
similarity of 0, so a token whose best cosine is negative scores 0 when its
batch holds a longer text, and its own value when it does not. Here each
maximum is over the real tokens only, whatever the batch.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from realitycheck.errors import InvalidInputError, MissingDependencyError

__all__ = [
    "bertscore",
    "check_layer",
    "encoder_path",
    "load_encoder",
    "require_torch",
    "token_embeddings",
]

_PURPOSE = "BERTScore"


def require_torch(purpose: str) -> Any:
    """Return the ``torch`` module once torch and transformers both import.

    The one check of the ``hf`` extra for everything that runs a transformers
    model (the ``hf`` backends, BERTScore, the ``finetuned`` detector): this
    module is the lowest layer that loads such models, so all of them can
    import it from here.

    Raises:
        MissingDependencyError: Naming the missing package, the ``hf`` extra and ``purpose``.
    """
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(exc.name or "torch", extra="hf", purpose=purpose) from None
    return torch


def encoder_path(model: str) -> str:
    """Return ``model``, or the folder of the bundled all-MiniLM-L6-v2 when it is empty.

    Raises:
        MissingDependencyError: If ``model`` is empty and the ``embed`` extra is missing.
    """
    if model:
        return model
    from realitycheck.encoders.embeddings import model_path

    return str(model_path())


def check_layer(model: str, layer: int, *, owner: str) -> None:
    """Fail, reading only the model's config, if ``layer`` is not one of its hidden layers.

    Raises:
        InvalidInputError: If the config cannot be read or ``layer`` is out of range.
    """
    require_torch(_PURPOSE)
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(model)
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"{owner}: cannot read the config of the model {model!r}: {exc}", field="model"
        ) from None
    n_layers = int(config.get_text_config().num_hidden_layers)
    if not -1 <= layer <= n_layers:
        raise InvalidInputError(
            f"The 'layer' parameter of {owner} must be in -1..{n_layers} for the model "
            f"{model!r} (0 = embeddings, -1 = last). Got {layer} instead.",
            field="layer",
        )


@functools.lru_cache(maxsize=2)
def load_encoder(model: str, device: str) -> tuple[Any, Any]:
    """Load (once per process) the encoder ``AutoModel`` and its tokenizer, in eval mode.

    Raises:
        MissingDependencyError: If torch or transformers is missing.
        InvalidInputError: If the model cannot be loaded.
    """
    torch = require_torch(_PURPOSE)
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    target = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
        if type(tokenizer).__name__.startswith(("GPT2", "Roberta")):
            # bert-score encodes with add_prefix_space=True for byte-level BPE.
            tokenizer = AutoTokenizer.from_pretrained(model, add_prefix_space=True)
        encoder = AutoModel.from_pretrained(model)
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"Cannot load the model {model!r}: {exc}", field="model") from None
    if hasattr(encoder, "encoder") and hasattr(encoder, "decoder"):
        encoder = encoder.encoder  # encoder-decoder models: the encoder, as bert-score does
    return encoder.to(target).eval(), tokenizer


def _encode(tokenizer: Any, text: str) -> list[int]:
    text = text.strip()
    if not text:
        return list(tokenizer.build_inputs_with_special_tokens([]))
    return list(
        tokenizer.encode(
            text, add_special_tokens=True, max_length=tokenizer.model_max_length, truncation=True
        )
    )


def token_embeddings(
    texts: Sequence[str], *, model: str, layer: int, device: str = "auto", batch_size: int = 32
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Return, per text, its unit token vectors ``(T, d)`` and token weights ``(T,)``.

    The weights are 1, except 0 for the tokenizer's CLS and SEP tokens.
    """
    torch = require_torch(_PURPOSE)
    encoder, tokenizer = load_encoder(model, device)
    special = {tokenizer.cls_token_id, tokenizer.sep_token_id} - {None}
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = [_encode(tokenizer, text) for text in texts]
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for start in range(0, len(ids), batch_size):
        chunk = ids[start : start + batch_size]
        width = max(len(row) for row in chunk)
        batch = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for i, row in enumerate(chunk):
            batch[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[i, : len(row)] = 1
        with torch.inference_mode():
            result = encoder(
                input_ids=batch.to(encoder.device),
                attention_mask=mask.to(encoder.device),
                output_hidden_states=True,
            )
        states = result.hidden_states[layer].float().cpu().numpy().astype(np.float64)
        for i, row in enumerate(chunk):
            vectors = states[i, : len(row)]
            vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            weights = np.array([0.0 if t in special else 1.0 for t in row])
            out.append((vectors, weights))
    return out


def _prf(
    candidate: tuple[np.ndarray, np.ndarray], reference: tuple[np.ndarray, np.ndarray]
) -> tuple[float, float, float]:
    cand, cand_w = candidate
    ref, ref_w = reference
    sim = cand @ ref.T
    precision = float((sim.max(axis=1) * cand_w).sum() / cand_w.sum()) if cand_w.sum() else 0.0
    recall = float((sim.max(axis=0) * ref_w).sum() / ref_w.sum()) if ref_w.sum() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def bertscore(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    model: str,
    layer: int = -1,
    device: str = "auto",
    batch_size: int = 32,
) -> np.ndarray:
    """Return BERTScore precision, recall and F1 of each candidate, shape ``(n, 3)``.

    Each candidate is compared with each of its references; with several,
    precision, recall and F1 are each the maximum over the references (taken
    separately, as ``bert-score`` does for multiple references). Each
    distinct text is embedded once.

    Args:
        candidates: The texts judged (responses, or response sentences).
        references: One non-empty sequence of reference texts per candidate.
        model: Local folder or hub id of a transformers encoder (``AutoModel``).
        layer: Hidden layer whose states are the token embeddings (0 =
            embeddings, -1 = last).
        device: ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``…
        batch_size: Texts per forward pass.

    Raises:
        InvalidInputError: If the lengths differ or a candidate has no reference.
    """
    if len(candidates) != len(references):
        raise InvalidInputError(
            f"bertscore needs one reference list per candidate. Got {len(candidates)} "
            f"candidates and {len(references)} reference lists instead."
        )
    empty = [k for k, refs in enumerate(references) if not refs]
    if empty:
        raise InvalidInputError(f"bertscore: candidate {empty[0]} has no reference.")
    texts = sorted(set(candidates) | {r for refs in references for r in refs})
    if not texts:
        return np.zeros((0, 3))
    row = {text: i for i, text in enumerate(texts)}
    embedded = token_embeddings(
        texts, model=model, layer=layer, device=device, batch_size=batch_size
    )
    out = np.zeros((len(candidates), 3))
    for k, (candidate, refs) in enumerate(zip(candidates, references, strict=True)):
        scores = [_prf(embedded[row[candidate]], embedded[row[r]]) for r in refs]
        out[k] = np.max(np.array(scores), axis=0)
    return out
