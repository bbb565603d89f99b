"""The manual (docs/, mkdocs.yml): the README's links into it, and a strict build that fails.

The whole site is built in strict mode by the test command
(scripts/setup-and-test.sh). These tests check what that build rests on:
every link of the README into docs/ names a page of the site, every README
section the site includes is marked in the README, and the strict build does
fail on each kind of broken reference (a page, an anchor, an API identifier,
an object mkdocstrings cannot find, a README section), built here on a
one-page site with the project's own configuration.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from mkdocs import config as mkdocs_config
from mkdocs.commands.build import build
from mkdocs.exceptions import Abort

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
INCLUDE = re.compile(r'^--8<-- "README\.md:([\w-]+)"$', re.M)


def _nav_pages(nav: list) -> set[str]:
    pages: set[str] = set()
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages |= _nav_pages(value) if isinstance(value, list) else {value}
    return pages


def test_every_readme_link_into_docs_is_a_page_of_the_site():
    config = mkdocs_config.load_config(str(ROOT / "mkdocs.yml"))
    in_nav = _nav_pages(config["nav"])
    links = re.findall(r"\]\(docs/([^)#]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    assert len(links) >= 10
    for link in links:
        assert (DOCS / link).is_file(), link
        assert link in in_nav, f"docs/{link} is not in mkdocs.yml's nav"


def test_every_readme_section_the_site_includes_is_marked_once():
    readme = README.read_text(encoding="utf-8")
    included = {m for page in DOCS.rglob("*.md") for m in INCLUDE.findall(page.read_text())}
    assert {"intro", "purpose", "concepts", "tour-cli", "own"} <= included
    for name in included:
        assert readme.count(f"<!-- --8<-- [start:{name}] -->") == 1, name
        assert readme.count(f"<!-- --8<-- [end:{name}] -->") == 1, name


def _build(tmp_path: Path, page: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(page, encoding="utf-8")
    (docs / "other.md").write_text("# Other\n\n## A section\n", encoding="utf-8")
    config = mkdocs_config.load_config(
        str(ROOT / "mkdocs.yml"),
        docs_dir=str(docs),
        site_dir=str(tmp_path / "site"),
        nav=[{"Home": "index.md"}, {"Other": "other.md"}],
    )
    build(config)


TEXT = (
    '# Home\n\n[a page](other.md), [an anchor](other.md#a-section)\n\n--8<-- "README.md:purpose"\n'
)
API = "\n[an error][realitycheck.errors.InvalidInputError]\n\n::: realitycheck.errors\n"


def test_the_one_page_site_builds_when_every_reference_holds(tmp_path):
    _build(tmp_path, TEXT + API)
    built = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert 'href="other/#a-section"' in built
    assert 'href="#realitycheck.errors.InvalidInputError"' in built
    assert "against human labels" in built  # the README's section, included


@pytest.mark.parametrize(
    ("page", "message"),
    [
        (TEXT.replace("(other.md)", "(missing.md)"), "missing.md"),
        (TEXT.replace("#a-section", "#no-such-section"), "no-such-section"),
        (TEXT + "[an error][realitycheck.errors.NoSuchError]", "realitycheck.errors.NoSuchError"),
        (TEXT + "::: realitycheck.no_such_module", "realitycheck.no_such_module"),
    ],
    ids=["page", "anchor", "api-identifier", "api-object"],
)
def test_a_broken_reference_fails_the_strict_build(tmp_path, caplog, page, message):
    with caplog.at_level(logging.WARNING), pytest.raises(Abort, match="Aborted with"):
        _build(tmp_path, page)
    assert message in caplog.text


def test_a_readme_section_that_is_gone_fails_the_build(tmp_path):
    with pytest.raises(Exception, match="no-such-section"):
        _build(tmp_path, TEXT.replace("README.md:purpose", "README.md:no-such-section"))
