"""What a component class says about itself, read without building it.

:func:`describe_class` reads a registered component class, never an instance:
its docstring (summary, body, examples), and for each parameter (each init
field) its type, default, constraint and the line documenting it under
``Args:`` or ``Attributes:`` in the docstring of the class or a base class.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import textwrap
from dataclasses import dataclass
from typing import Any

from realitycheck.params import constraint_text, param_doc
from realitycheck.registry._key_syntax import format_value

__all__ = ["ComponentDoc", "ParamDoc", "default_of", "describe_class", "singular"]

_SECTION = re.compile(r"^(Args|Arguments|Attributes|Parameters):\s*$")
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_][A-Za-z0-9_]*)(?:\s*\([^)]*\))?:\s*(.*)$")


def singular(family: str) -> str:
    """Return one member of ``family`` in words: ``studies`` gives ``study``."""
    if family.endswith("ies"):
        return family[:-3] + "y"
    return family[:-1] if family.endswith("s") else family


@dataclass(frozen=True)
class ParamDoc:
    """One parameter of a component.

    Attributes:
        name: The field name, as written in a key or a TOML table.
        type: The annotation as written in the source.
        default: The default written as a key value would be; ``None`` when required.
        doc: Its line(s) under ``Args:`` / ``Attributes:``, joined; ``""`` if undocumented.
        constraint: What values it takes, when the field declares a constraint.
        component: The family of the nested component it holds (``backends``), or ``""``.
        in_key: Whether a non-default value shows in the component's key.
    """

    name: str
    type: str
    default: str | None
    doc: str
    constraint: str = ""
    component: str = ""
    in_key: bool = True

    @property
    def required(self) -> bool:
        """Whether the component cannot be built without this parameter."""
        return self.default is None


@dataclass(frozen=True)
class ComponentDoc:
    """The documentation of one registered component class.

    Attributes:
        name: The canonical registered name.
        family: The registry family (``datasets``, ``backends``…).
        summary: The first line of the docstring.
        body: The rest of the docstring, without its ``Args:`` / ``Attributes:`` section.
        params: Every parameter, in declaration order.
        facts: Class-level facts, e.g. ``needs``, ``capabilities``, ``version``.
    """

    name: str
    family: str
    summary: str
    body: str
    params: tuple[ParamDoc, ...]
    facts: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        """Return the documentation as plain JSON-able data."""
        out = dataclasses.asdict(self)
        for param, doc in zip(out["params"], self.params, strict=True):
            param["required"] = doc.required
        return out

    def to_text(self) -> str:
        """Return the documentation as plain text for a terminal."""
        lines = [f"{self.name} ({singular(self.family)})", "", self.summary]
        if self.body:
            lines += ["", self.body]
        lines += ["", "Parameters:" if self.params else "Parameters: none"]
        for p in self.params:
            default = "required" if p.required else f"default {p.default}"
            head = f"  {p.name}: {p.type} ({default})"
            if not p.in_key:
                head += " [not in the key]"
            lines.append(head)
            if p.constraint:
                lines.append(_wrap(f"must be {p.constraint}"))
            if p.doc:
                lines.append(_wrap(p.doc))
        if self.facts:
            lines.append("")
            lines.extend(f"{k}: {v}" for k, v in self.facts.items())
        return "\n".join(lines)


def _wrap(text: str) -> str:
    return textwrap.fill(
        text,
        width=88,
        initial_indent=" " * 6,
        subsequent_indent=" " * 6,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _sections(doc: str) -> tuple[str, dict[str, str]]:
    """Split a cleaned docstring into its text without Args/Attributes and their entries."""
    body: list[str] = []
    entries: dict[str, str] = {}
    current: str | None = None
    in_section = False
    for line in doc.splitlines():
        if _SECTION.match(line):
            in_section, current = True, None
            continue
        if in_section:
            if not line.strip():
                current = None
                continue
            if not line.startswith(" "):
                in_section = bool(_SECTION.match(line))
                if not in_section:
                    body.append(line)
                continue
            stripped = line.strip()
            entry = _ENTRY.match(stripped) if len(line) - len(line.lstrip()) <= 4 else None
            if entry is not None:
                current = entry.group(1).lstrip("*")
                entries[current] = entry.group(2).strip()
            elif current is not None:
                entries[current] = f"{entries[current]} {stripped}".strip()
            continue
        body.append(line)
    return "\n".join(body).strip(), entries


def _type_text(annotation: Any) -> str:
    """Return an annotation as written (a string under ``from __future__ import annotations``)."""
    if isinstance(annotation, str):
        return annotation
    text = inspect.formatannotation(annotation)
    return re.sub(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)", r"\1", text)  # no module prefixes


def default_of(f: dataclasses.Field[Any]) -> Any:
    """Return the default of a field (built by its factory), or ``dataclasses.MISSING``."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _default(f: dataclasses.Field[Any]) -> str | None:
    value = default_of(f)
    return None if value is dataclasses.MISSING else format_value(value)


def _constraint(f: dataclasses.Field[Any]) -> str:
    text = constraint_text(f)
    return "" if text == "any value" else text


def _facts(cls: type) -> dict[str, str]:
    facts: dict[str, str] = {"version": str(getattr(cls, "version", "1"))}
    for attr in ("needs", "capabilities"):
        value = getattr(cls, attr, None)
        if isinstance(value, frozenset | set):
            facts[attr] = ", ".join(sorted(value)) or "none"
    description = getattr(cls, "description", "")
    if isinstance(description, str) and description:
        facts["description"] = description
    title = getattr(cls, "title", "")
    if isinstance(title, str) and title:
        facts["title"] = title
    return facts


def describe_class(cls: type, *, family: str = "") -> ComponentDoc:
    """Document a component class from its docstring and fields, without building it."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    summary, _, rest = doc.partition("\n")
    body, entries = _sections(rest)
    for base in cls.__mro__[1:]:  # parameters a base class declares and documents
        if base.__doc__ and base is not object:
            for name, text in _sections(inspect.cleandoc(base.__doc__))[1].items():
                entries.setdefault(name, text)
    params = []
    fields = dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()
    for f in fields:
        if not f.init:
            continue
        nested = f.metadata.get("component", "")
        params.append(
            ParamDoc(
                name=f.name,
                type=_type_text(f.type),
                default=_default(f),
                doc=entries.get(f.name, "") or param_doc(f),
                constraint=_constraint(f),
                component=nested if isinstance(nested, str) else getattr(nested, "family", ""),
                in_key=bool(f.metadata.get("in_key", True)),
            )
        )
    return ComponentDoc(
        name=str(getattr(cls, "name", "") or cls.__name__),
        family=family or str(getattr(cls, "family", "")),
        summary=summary.strip(),
        body=body,
        params=tuple(params),
        facts=_facts(cls),
    )
