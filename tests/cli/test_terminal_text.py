"""Untrusted text (model names in a study's finding, notes, keys) never reaches the terminal raw."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import click

from realitycheck.cli._common import terminal_lines
from realitycheck.cli._echo import listener_for

HOSTILE = "org/\x1b]0;PWNED\x07gpt\u202e\x00"


def test_terminal_lines_keeps_line_breaks_and_shows_every_other_control():
    shown = terminal_lines(f"first {HOSTILE}\nsecond\x9b31m")
    assert shown == "first org/[U+001B]]0;PWNED[U+0007]gpt[U+202E][U+0000]\nsecond[U+009B]31m"


def test_a_study_finding_naming_a_hostile_model_prints_escaped(capsys):
    echo = listener_for(click.Context(click.Command("study")))
    result = SimpleNamespace(
        study="leaderboard",
        finding=f"{HOSTILE} hallucinates least.\nSecond line.",
        skipped=[f"{HOSTILE}: no human labels"],
    )
    echo.study(SimpleNamespace(result=result, folder=Path("out/studies/leaderboard")))
    echo.note(f"a note about {HOSTILE}")
    printed = capsys.readouterr()
    both = printed.out + printed.err
    assert not any(c in both for c in "\x1b\x07\u202e\x00")
    assert "org/[U+001B]]0;PWNED[U+0007]gpt[U+202E][U+0000] hallucinates least.\n" in printed.out
    assert "Second line." in printed.out  # a finding keeps its lines
    assert "not run on org/[U+001B]" in printed.out and "note: a note about org/[U+001B]" in both
