"""How a server and its untrusted text are named in warnings and errors.

A server's URL, a model name and a server's error text are untrusted: they
may carry control and escape sequences (C0/C1, ESC, NUL) or bidi controls
that would rewrite a terminal line or reorder what a reader sees.
:func:`escape_controls` shows each as ``[U+XXXX]``; :func:`server_name` is
the one way a server and model are named ("<base_url> (model <model>)").
"""

from __future__ import annotations

import re

__all__ = ["escape_controls", "server_name"]

_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """Return ``text`` with control, escape and bidi characters shown as ``[U+XXXX]``.

    Covers C0 (NUL, ESC, newlines included) and DEL, C1, and the bidi
    marks, embeddings, overrides and isolates.
    """
    return _CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


def server_name(base_url: str, model: str) -> str:
    """Return how messages name ``model`` on the server at ``base_url``: ``"<url> (model <m>)"``.

    Both parts are shown with :func:`escape_controls`, so the name is safe on one line.

    Examples:
        >>> server_name("http://127.0.0.1:8000/v1", "llama")
        'http://127.0.0.1:8000/v1 (model llama)'
    """
    return f"{escape_controls(str(base_url))} (model {escape_controls(str(model))})"
