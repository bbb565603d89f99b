"""Where the ``files`` dataset reads: globs in any part of a path, and fields taken from it.

A path is a pattern. ``*``, ``?`` and ``[...]`` match within one part of the
path (between two ``/``); ``**``, a whole part, matches any number of folders,
none included; ``{name}`` matches a non-empty piece of one part and gives every
row read from that file the column ``name`` with that piece as its value, and
``{name:GLOB}`` matches only what GLOB matches (``{model:llama*}``). A name
used twice must match the same text both times. Where two placeholders could
split a part in several ways, each takes the shortest text that lets the rest
match (``{a}_{b}`` splits ``x_y_z`` into ``x`` and ``y_z``). A file or folder
whose name starts with ``.`` matches only a part that starts with ``.`` too,
as in a shell; a part whose only glob is a bracket (``runs [v2]``) is read as
written when a file or folder of that name exists. Matches are sorted part by
part (folders before the names inside them), so a pattern always reads its
files in one order.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from realitycheck.errors import DataNotFoundError, InvalidInputError
from realitycheck.params import Satisfies, as_tuple, param_error

__all__ = [
    "PATHS",
    "PLACEHOLDER",
    "PathMatch",
    "PathPattern",
    "check_patterns",
    "escape",
    "fill",
    "path_entries",
    "placeholders",
    "unique_labels",
]

PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)(?::((?:\[[^\]/]+\]|[^{}/\[])*))?\}")
"""``{name}`` or ``{name:GLOB}``; a ``{`` not followed by a name and ``}`` is plain text."""

_MAGIC = frozenset("*?[")


def path_entries(value: Any) -> Any:
    """Normalise ``path``: one path as text, several as a tuple of texts."""
    items = as_tuple(value)
    if not isinstance(items, tuple) or not all(isinstance(v, str | os.PathLike) for v in items):
        return value
    texts = tuple(os.fspath(v) for v in items)
    return texts[0] if len(texts) == 1 else texts


def _is_paths(value: Any) -> bool:
    items = (value,) if isinstance(value, str) else value
    return (
        isinstance(items, tuple)
        and bool(items)
        and all(isinstance(v, str) and v.strip() for v in items)
    )


PATHS = Satisfies(
    _is_paths,
    "a non-empty path, a pattern such as 'runs/*/data.json' or '{model}/{subset}.jsonl', "
    "or a list of them",
)
"""The constraint of a ``path`` (or ``join``) parameter."""


def placeholders(text: str) -> list[str]:
    """Return the placeholder names of a path pattern, each once, in order of first use."""
    return list(dict.fromkeys(m.group(1) for m in PLACEHOLDER.finditer(text)))


def escape(text: str) -> str:
    """Return ``text`` as a pattern that matches only itself (``*`` is ``[*]``, ``{`` ``[{]``)."""
    return "".join(f"[{c}]" if c in "*?[{}" else c for c in text)


def fill(template: str, fields: Mapping[str, str]) -> str:
    """Return ``template`` with each ``{name}`` replaced by ``fields[name]``, escaped.

    Placeholders whose name is not in ``fields`` stay as they are.
    """

    def put(match: re.Match[str]) -> str:
        name = match.group(1)
        return escape(fields[name]) if name in fields else match.group(0)

    return PLACEHOLDER.sub(put, template)


def _is_magic(part: str) -> bool:
    return bool(_MAGIC & set(part)) or PLACEHOLDER.search(part) is not None


def _class_end(text: str, start: int) -> int:
    """Return the index after the ``]`` closing the class opened at ``start``, or -1."""
    i = start + 1
    if i < len(text) and text[i] == "!":
        i += 1
    if i < len(text) and text[i] == "]":
        i += 1
    end = text.find("]", i)
    return -1 if end < 0 else end + 1


def _glob_regex(text: str) -> str:
    """Translate a glob of one path part (no placeholders) into a regular expression."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := _class_end(text, i)) > 0:
            inner = text[i + 1 : end - 1]
            negate = inner.startswith("!")
            inner = "".join(f"\\{c}" if c in "[]\\^&~|" else c for c in inner[negate:])
            out.append(("[^" if negate else "[") + inner + "]")
            i = end
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class PathMatch:
    """One file a pattern matched.

    Attributes:
        path: The file.
        fields: The placeholders' values, by name, in order of first use.
        relative: The file's path below the pattern's fixed folder, with ``/``.
        pinned: A pattern that matches this file only and gives the same fields.
    """

    path: Path
    fields: dict[str, str] = field(default_factory=dict)
    relative: str = ""
    pinned: str = ""


@dataclass(frozen=True)
class PathPattern:
    """A path with globs and ``{name}`` placeholders in any of its parts.

    Args:
        text: The pattern as given (``~`` is expanded).
        base: The folder a relative pattern is read under (never read as a pattern).
    """

    text: str
    base: Path | None = None

    @property
    def fields(self) -> list[str]:
        """The placeholder names, in order of first use."""
        return placeholders(self.text)

    def _split(self) -> tuple[Path, list[str]]:
        """Return the fixed folder (no glob or placeholder) and the pattern's other parts.

        A part whose only glob is a bracket (``runs [v2]``) is read as written
        when a file or folder of exactly that name exists there.
        """
        given = Path(self.text).expanduser()
        parts = list(given.parts)
        root = Path(self.base) if not given.is_absolute() and self.base is not None else Path()
        fixed = 0
        while fixed < len(parts):
            part = parts[fixed]
            literal = not _is_magic(part) or (
                not (set("*?") & set(part))
                and PLACEHOLDER.search(part) is None
                and (root / part).exists()
            )
            if not literal:
                break
            root = root / part
            fixed += 1
        return root, parts[fixed:]

    @property
    def is_pattern(self) -> bool:
        """Whether any part holds a glob or a placeholder."""
        return bool(self._split()[1])

    def _regex(self, rest: list[str]) -> tuple[re.Pattern[str], list[str], str]:
        """Return the regex of the parts below the fixed folder, each group's name, a glob."""
        names: list[str] = []  # placeholder name of group _0, _1, ...
        regex, glob = [], []
        for part in rest:
            if part == "**":
                regex.append("(?:[^/]+/)*")
                glob.append("**")
                continue
            if "**" in PLACEHOLDER.sub("", part):
                raise InvalidInputError(
                    f"'**' must be a whole part of the path (as in 'runs/**/x.json'). Got "
                    f"{part!r} in the path {self.text!r} instead; use '*' within a part."
                )
            piece, star, at = [], [], 0
            for match in PLACEHOLDER.finditer(part):
                piece.append(_glob_regex(part[at : match.start()]))
                star.append(part[at : match.start()])
                name, only = match.group(1), match.group(2)
                group = f"_{len(names)}"
                if name in names:
                    inner = f"(?P={'_' + str(names.index(name))})"
                else:
                    inner = f"(?:{_glob_regex(only)})" if only is not None else "[^/]+?"
                piece.append(f"(?P<{group}>{inner})")
                star.append(only if only else "*")
                names.append(name)
                at = match.end()
            piece.append(_glob_regex(part[at:]))
            star.append(part[at:])
            regex.append("".join(piece) + "/")
            glob.append("".join(star))
        text = "".join(regex)
        text = text[:-1] if text.endswith("/") else text
        return re.compile(text), names, "/".join(glob)

    def check(self) -> None:
        """Refuse a malformed pattern without reading the disk (``**`` inside a part).

        Raises:
            InvalidInputError: Naming the part.
        """
        self._regex([p for p in Path(self.text).parts if _is_magic(p)])

    def matches(self) -> list[PathMatch]:
        """Return the files the pattern matches, sorted part by part; a plain path as is.

        A plain path (no glob, no placeholder) is returned whether or not it
        exists; the caller says it is missing.

        Raises:
            DataNotFoundError: A pattern that matches no file (naming it).
            InvalidInputError: A ``**`` that is not a whole part of the path.
        """
        root, rest = self._split()
        if not rest:
            return [PathMatch(root, {}, root.name, escape(str(root)))]
        regex, names, glob = self._regex(rest)
        hidden_ok = [p for p in rest if p.startswith(".")]
        found = []
        candidates = root.glob(glob) if root.is_dir() else iter(())
        for candidate in candidates:
            relative = candidate.relative_to(root).as_posix()
            match = regex.fullmatch(relative)
            if match is None or not candidate.is_file():
                continue
            if not all(match.group(f"_{i}") for i in range(len(names))):
                continue  # a placeholder matches a non-empty piece
            if any(
                p.startswith(".") and not any(re.fullmatch(_glob_regex(h), p) for h in hidden_ok)
                for p in relative.split("/")
            ):
                continue
            values: dict[str, str] = {}
            for i, name in enumerate(names):
                values.setdefault(name, match.group(f"_{i}"))
            found.append(PathMatch(candidate, values, relative, self._pin(root, match, names)))
        if not found:
            missing = "" if root.is_dir() else ", which is not a folder"
            raise DataNotFoundError(
                f"No file matches the path pattern {self.text!r}: looked below "
                f"{str(root) or '.'!r}{missing}. Globs (*, ?, [...], ** for any number of "
                "folders) and {name} placeholders match within the parts of the path below "
                "it; check the folder names and the extension."
            )
        return sorted(found, key=lambda m: tuple(m.relative.split("/")))

    @staticmethod
    def _pin(root: Path, match: re.Match[str], names: list[str]) -> str:
        """Return a pattern for the matched file only, keeping its placeholders."""
        relative = match.string
        out, at = [], 0
        for i, name in enumerate(names):
            start, end = match.span(f"_{i}")
            out.append(escape(relative[at:start]))
            out.append(f"{{{name}:{escape(relative[start:end])}}}")
            at = end
        out.append(escape(relative[at:]))
        return str(Path(escape(str(root))) / "".join(out))


def check_patterns(owner: str, given: Mapping[str, Any]) -> None:
    """Refuse a malformed pattern in any of the parameters ``given`` (name -> paths).

    Raises:
        InvalidInputError: In the one parameter-error shape, naming the parameter.
    """
    for name, paths in given.items():
        for text in paths:
            try:
                PathPattern(str(text)).check()
            except InvalidInputError as exc:
                raise param_error(name, owner, "a path or a pattern", text, hint=str(exc)) from None


def unique_labels(matches: list[PathMatch]) -> list[str]:
    """Return a short distinct name per file: the parts of its path that tell it apart.

    Each file's path below its pattern's folder, without the extension, less
    the parts every file shares at the same place: ``data/*/data.json`` names
    its files ``gpt`` and ``llama``, ``by_model/*.json`` by their stems. Files
    whose names would still be equal (``a/x.json`` and ``b/x.json`` from two
    patterns) get as many of their folders in front as it takes.
    """
    split = [Path(m.relative or m.path.name).with_suffix("").parts for m in matches]
    keep = [True] * (len(split[0]) if split else 0)
    if len(matches) > 1 and len({len(p) for p in split}) == 1:
        keep = [len({p[i] for p in split}) > 1 for i in range(len(split[0]))]
        if not any(keep):
            keep = [True] * len(keep)
    labels = [
        "/".join(x for x, k in zip(p, keep, strict=True) if k)
        if len(p) == len(keep)
        else "/".join(p)
        for p in split
    ]
    depth = [len(Path(m.relative or m.path.name).parts) for m in matches]

    def longer(i: int) -> str:
        return "/".join(matches[i].path.with_suffix("").parts[-depth[i] :])

    while True:
        repeated = {x for x in labels if labels.count(x) > 1}
        grow = [
            i
            for i, x in enumerate(labels)
            if x in repeated and depth[i] < len(matches[i].path.parts)
        ]
        if not grow:
            return labels
        for i in grow:
            depth[i] += 1
            labels[i] = longer(i)
