"""Model names as a reader sees them: the parts of a model id and its short display name.

A generator's name is untrusted text: an organisation or folder path
(``meta-llama/Llama-3-8B``, ``/models/Qwen2.5-7B``) or anything at all
(``<script>alert(1)</script> model``, ``org/<b>x</b>``). Only a real path
separator may be cut at, so :func:`model_parts` reads a path prefix from the
left, one part at a time, and stops at the first part that does not look
like a path part: the rest of the name is its last part, whole, whatever
``/`` it holds. A path part is a run of ASCII letters, digits and ``_ . ~ :
@ + -`` (what organisation names, Hugging Face repo ids, Ollama tags and
folder names are made of); the first part may also start a path with ``/``.
So ``org/<b>x</b>`` is ``org`` and ``<b>x</b>``, and ``<script>alert(1)</script>
model``, whose first ``/`` follows ``<script>alert(1)<``, is one part: no
short name ever begins inside markup. A component key (``openai[model=org/x]``)
or a name with spaces before its ``/`` is one part too.

:func:`short_names` keeps the shortest run of trailing parts that no other
name shares, as :func:`realitycheck.plots.short_labels` does with every ``/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["model_parts", "short_names"]

_PREFIX_PART = re.compile(r"(/?[A-Za-z0-9_.~:@+-]+)/")
"""One part of a path prefix and the ``/`` after it (a leading ``/`` starts an absolute path)."""


def model_parts(name: str) -> tuple[str, ...]:
    """The ``/``-separated parts of a model name, cut only at real path separators.

    The parts joined with ``/`` give the name back. A name whose path prefix
    would leave nothing after its last ``/`` (``models/llama/``) keeps that
    ``/`` in its last part.

    >>> model_parts("meta-llama/Llama-3-8B")
    ('meta-llama', 'Llama-3-8B')
    >>> model_parts("org/<b>x</b>")
    ('org', '<b>x</b>')
    >>> model_parts("<script>alert(1)</script> model")
    ('<script>alert(1)</script> model',)
    """
    text = str(name)
    parts: list[str] = []
    at = 0
    while (match := _PREFIX_PART.match(text, at)) is not None:
        if match.end() == len(text):  # nothing after this "/": it is part of the last part
            break
        if parts and match.group(1).startswith("/"):
            break  # "a//b": an empty part is no path part
        parts.append(match.group(1))
        at = match.end()
    return (*parts, text[at:])


def short_names(names: Iterable[Any]) -> dict[str, str]:
    """Map each name to its shortest run of trailing :func:`model_parts` that no other name shares.

    ``meta-llama/Llama-3-8B`` alone becomes ``Llama-3-8B``; next to
    ``my-finetune/Llama-3-8B`` both keep their organisation; a name that is a
    whole suffix of another (``Llama-3-8B`` beside ``meta-llama/Llama-3-8B``)
    stays as it is and the longer one keeps enough parts to differ. Only real
    path separators are cut at (:func:`model_parts`): ``org/<b>x</b>`` becomes
    ``<b>x</b>``, never ``b>``, and ``<script>alert(1)</script> model`` stays
    whole. Distinct names always get distinct short names; names are taken as
    ``str``.
    """
    distinct = list(dict.fromkeys(str(n) for n in names))
    parts = {n: model_parts(n) for n in distinct}
    out: dict[str, str] = {}
    for name in distinct:
        own = parts[name]
        out[name] = name
        for k in range(1, len(own) + 1):
            suffix = own[-k:]
            if not any(parts[o][-k:] == suffix for o in distinct if o != name):
                out[name] = "/".join(suffix)
                break
    while True:  # never one label for two names: those keep their whole name (distinct)
        shown: dict[str, list[str]] = {}
        for name, short in out.items():
            shown.setdefault(short, []).append(name)
        clash = [n for same in shown.values() if len(same) > 1 for n in same if out[n] != n]
        if not clash:
            return out
        out.update({n: n for n in clash})
