"""Prompt tokenisation shared by the local backends (``hf`` and ``vllm``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from realitycheck.backends._base import GenerationRequest
from realitycheck.errors import InvalidInputError

__all__ = ["chat_text", "continuation_start"]


def chat_text(
    tokenizer: Any, request: GenerationRequest, *, chat_template: bool
) -> tuple[str, bool]:
    """Return the text the model sees for ``request`` and whether to add special tokens.

    A plain prompt is itself. Messages are rendered with the tokenizer's chat
    template when ``chat_template`` is true and the tokenizer has one (the
    template writes its own special tokens, so none are added); otherwise as
    ``role: content`` lines ending in ``assistant:``.
    """
    if not request.messages:
        return request.prompt, True
    messages = [dict(m) for m in request.messages]
    if chat_template and getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return text, False
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages) + "\nassistant:", True


def continuation_start(prompt_ids: Sequence[int], whole_ids: Sequence[int], index: int) -> int:
    """Return where the continuation starts in the tokens of prompt + continuation.

    That is the length of the longest prefix that the prompt's tokens and the
    joint text's tokens share, so a token spanning the boundary counts to the
    continuation.

    Args:
        prompt_ids: The tokens of the prompt alone.
        whole_ids: The tokens of the prompt followed by the continuation.
        index: The pair's position, for the error message.

    Raises:
        InvalidInputError: If the two share no token (nothing to condition on).
    """
    shared = 0
    while shared < min(len(prompt_ids), len(whole_ids)) and prompt_ids[shared] == whole_ids[shared]:
        shared += 1
    if shared == 0:
        raise InvalidInputError(
            f"The prompt of pair {index} gives no token to condition on; give a non-empty "
            "prompt or use a tokenizer that adds a BOS token."
        )
    return shared
