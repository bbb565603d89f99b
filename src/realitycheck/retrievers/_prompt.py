"""How retrieved passages are prepended to a prompt (in-context retrieval augmentation).

As in in-context retrieval-augmented language models (Ram et al., 2023, *In-Context
Retrieval-Augmented Language Models*, TACL 11), the passages are placed before the
model's input, unchanged otherwise; the model is not retrained. The template is
``prompts/passages.v1.txt`` (written for this project): one sentence saying what
the passages are, then the passages, numbered in rank order, each
``[i] <title>`` on its own line (left out without a title) followed by its text,
separated by blank lines. A blank line separates this block from the input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from string import Template

from realitycheck.retrievers._base import Passage

__all__ = ["PASSAGES_TEMPLATE", "format_passages", "prepend_passages"]

PASSAGES_TEMPLATE = "passages.v1.txt"
"""The file name (under ``realitycheck/retrievers/prompts``) of the template in use."""


@cache
def _template() -> Template:
    path = resources.files("realitycheck.retrievers").joinpath("prompts", PASSAGES_TEMPLATE)
    return Template(path.read_text(encoding="utf-8").rstrip("\n"))


def _numbered(passages: Sequence[Passage]) -> str:
    blocks = []
    for rank, passage in enumerate(passages, start=1):
        head = f"[{rank}] {passage.title}\n" if passage.title.strip() else f"[{rank}] "
        blocks.append(head + passage.text)
    return "\n\n".join(blocks)


def format_passages(
    passages: Sequence[Passage], *, quote: Callable[[str], str] | None = None
) -> str:
    """Return the retrieval block of ``passages`` (see the module docstring).

    Args:
        passages: The passages, most relevant first.
        quote: Applied to the numbered passages before they enter the template
            (a generation prompt puts them between ``<passages>`` tags).
    """
    numbered = _numbered(passages)
    return _template().substitute(passages=quote(numbered) if quote else numbered)


def prepend_passages(
    text: str, passages: Sequence[Passage], *, quote: Callable[[str], str] | None = None
) -> str:
    """Return ``text`` after its retrieval block; ``text`` unchanged when no passage was found."""
    if not passages:
        return text
    return f"{format_passages(passages, quote=quote)}\n\n{text}"
