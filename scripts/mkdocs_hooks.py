"""MkDocs hooks of the manual (``hooks:`` in mkdocs.yml).

Two generated pages, written from the command line itself so that they cannot
drift from it: a page holding ``<!-- generated: components -->`` gets the
output of ``realitycheck components`` and ``realitycheck describe`` for every
registered component, and one holding ``<!-- generated: cli -->`` gets the
``--help`` of every command. A command that fails stops the build.

Docstrings are written for ``help()`` and Sphinx (``:class:`~x.Y```, ``::``
before a literal block); :func:`on_page_content` turns those roles into code
spans in the rendered API reference.

:class:`PublicTable` (a griffe extension, named in mkdocs.yml) gives the API
reference the public names of ``realitycheck``: its ``__all__`` is computed
from the table ``_PUBLIC``, which static analysis cannot evaluate.
"""

from __future__ import annotations

import ast
import html
import re
from typing import Any

import click
import griffe
from click.testing import CliRunner

COMPONENTS = "<!-- generated: components -->"
CLI = "<!-- generated: cli -->"
WIDTH = 96

_ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):<code>~?([^<]*)</code>"
)
_LITERAL_MARK = re.compile(r"<p>::</p>\n?|(?<=:):(?=</p>)")
_CELL = re.compile(r"<td>.*?</td>", re.S)


def _run(*args: str) -> str:
    from realitycheck.cli import cli

    done = CliRunner().invoke(
        cli, list(args), prog_name="realitycheck", terminal_width=WIDTH, catch_exceptions=False
    )
    if done.exit_code != 0:
        raise click.ClickException(f"realitycheck {' '.join(args)} exited {done.exit_code}")
    return done.output.rstrip()


def _fence(text: str) -> str:
    return f"```text\n{text}\n```"


def components_page() -> str:
    """Return ``realitycheck components``, then ``describe`` of each component, by family."""
    listing = _run("components")
    parts = [_fence(listing)]
    family = ""
    for line in listing.splitlines():
        if not line.startswith(" "):
            family = line.rstrip(":")
            parts.append(f"## {family.capitalize()}")
            continue
        name = line.split()[0]
        parts.append(f"### `{name}` {{ #{family}-{name} }}")
        parts.append(_fence(_run("describe", "--family", family, name)))
    return "\n\n".join(parts)


def _commands(command: click.Command, path: list[str]) -> list[tuple[list[str], click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name in command.list_commands(click.Context(command)):
            sub = command.get_command(click.Context(command), name)
            if sub is not None and not sub.hidden:
                found += _commands(sub, [*path, name])
    return found


def cli_page() -> str:
    """Return the ``--help`` of the command line and of each of its commands."""
    from realitycheck.cli import cli

    parts = []
    for path, _ in _commands(cli, []):
        title = " ".join(["realitycheck", *path])
        anchor = "-".join(["cli", *path]) if path else "cli-realitycheck"
        parts.append(f"## `{title}` {{ #{anchor} }}")
        parts.append(_fence(_run(*path, "--help")))
    return "\n\n".join(parts)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Fill the generated pages."""
    if COMPONENTS in markdown:
        markdown = markdown.replace(COMPONENTS, components_page())
    if CLI in markdown:
        markdown = markdown.replace(CLI, cli_page())
    return markdown


def on_page_content(content: str, **_: Any) -> str:
    """Show Sphinx roles of docstrings (``:class:`~a.B```) as code spans (``B``)."""

    def short(match: re.Match[str]) -> str:
        target = html.unescape(match[1])
        shown = target.rsplit(".", 1)[-1] if match[0].count("~") else target
        return f"<code>{html.escape(shown)}</code>"

    content = _LITERAL_MARK.sub("", _ROLE.sub(short, content))
    # "\\|" is how a table cell of the README writes "|" (GitHub's rule), code spans included.
    return _CELL.sub(lambda cell: cell[0].replace("\\|", "|"), content)


class PublicTable(griffe.Extension):
    """Set the exports of ``realitycheck`` from its literal table ``_PUBLIC``."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Read ``_PUBLIC`` from the package's source, as ``__all__`` is derived from it."""
        if pkg.path != "realitycheck" or pkg.filepath is None:
            return
        tree = ast.parse(pkg.filepath.read_text(encoding="utf-8"))  # type: ignore[union-attr]
        table = next(
            node.value
            for node in tree.body
            if isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "_PUBLIC"
        )
        names = [name for group in ast.literal_eval(table).values() for name in group]
        pkg.exports = sorted([*names, "__version__"])
