"""How servers are named in warnings and errors, and how their untrusted text is shown."""

from __future__ import annotations

import logging
import re

import pytest

from realitycheck.backends import GenerationRequest, server_name
from realitycheck.backends._names import escape_controls
from realitycheck.backends.openai._server import warn_once

LOGGER = "realitycheck.backends.openai"
RAW = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
HOSTILE = [
    ("\x1b[2J\x1b]0;pwned\x07", "[U+001B][2J[U+001B]]0;pwned[U+0007]"),  # CSI, OSC, BEL
    ("a\x00b\nc\rd\te", "a[U+0000]b[U+000A]c[U+000D]d[U+0009]e"),
    ("\x7f\x85\x9b31m", "[U+007F][U+0085][U+009B]31m"),  # DEL, NEL, C1 CSI
    ("gpt\u202e4o\u2066x\u2069\u200f\u061c", "gpt[U+202E]4o[U+2066]x[U+2069][U+200F][U+061C]"),
    ("plain text, é, 中文", "plain text, é, 中文"),
]


@pytest.mark.parametrize(("text", "shown"), HOSTILE)
def test_control_escape_and_bidi_characters_are_shown_as_code_points(text, shown):
    assert escape_controls(text) == shown
    assert not RAW.search(escape_controls(text))


def test_server_name_is_the_url_and_the_model_escaped():
    assert (
        server_name("http://127.0.0.1:8000/v1", "llama") == "http://127.0.0.1:8000/v1 (model llama)"
    )
    assert server_name("http://h/v1", "m\x1b[31m") == "http://h/v1 (model m[U+001B][31m)"


@pytest.mark.parametrize(("text", "shown"), HOSTILE)
def test_warn_once_logs_the_server_model_and_message_escaped(caplog, text, shown):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        warn_once("http://127.0.0.1:1/v1", "m" + text, "feature", "said: " + text)
        warn_once("http://127.0.0.1:1/v1", "m" + text, "feature", "said: " + text)
    (record,) = caplog.records
    assert record.getMessage() == f"http://127.0.0.1:1/v1 (model m{shown}): said: {shown}"


def test_a_hostile_model_name_reaches_the_log_escaped(make_backend, server, caplog):
    server.ignores = {"logprobs"}
    backend = make_backend(model="evil\x1b]8;;http://x\x07\u202emodel")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        (gen,) = backend.generate([GenerationRequest(prompt="q", logprobs=True)])
    assert gen.unsupported == ("logprobs",)
    (message,) = [r.getMessage() for r in caplog.records if "'logprobs'" in r.getMessage()]
    assert not RAW.search(message), repr(message)
    assert "evil[U+001B]]8;;http://x[U+0007][U+202E]model" in message
