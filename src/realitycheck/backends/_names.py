"""How a server and its untrusted text are named in warnings and errors.

A server's URL, a model name and a server's error text are untrusted: they
may carry control and escape sequences (C0/C1, ESC, NUL) or bidi controls
that would rewrite a terminal line or reorder what a reader sees.
:func:`escape_controls` (from :mod:`realitycheck.text`) shows each as
``[U+XXXX]``; :func:`server_name` is the one way a server and model are named
("<base_url> (model <model>)"), and :func:`server_of` names a backend so.
"""

from __future__ import annotations

from typing import Any

from realitycheck.text import escape_controls

__all__ = ["escape_controls", "server_name", "server_of"]


def server_name(base_url: str, model: str) -> str:
    """Return how messages name ``model`` on the server at ``base_url``: ``"<url> (model <m>)"``.

    Both parts are shown with :func:`escape_controls`, so the name is safe on one line.

    Examples:
        >>> server_name("http://127.0.0.1:8000/v1", "llama")
        'http://127.0.0.1:8000/v1 (model llama)'
    """
    return f"{escape_controls(str(base_url))} (model {escape_controls(str(model))})"


def server_of(backend: Any) -> str:
    """Return :func:`server_name` of a backend: its ``base_url`` and ``model``, else its key."""
    return server_name(
        getattr(backend, "base_url", "") or backend.key,
        getattr(backend, "model", "") or backend.key,
    )
