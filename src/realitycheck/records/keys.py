"""The grammar of the keys that name stored labels and scores.

A label or score names what produced it by a key. Most keys are component
keys (``rouge_l``, ``length[unit=chars]``); a few name what a dataset shipped:

==========================  ==================================================
``human``                   the human label of the dataset (aggregate)
``human[protocol=<name>]``  the aggregate under a named protocol
``human:<annotator>``       one annotator's label
``recorded:<name>``         a detector score or judge label the dataset shipped
==========================  ==================================================

:class:`LabelKey` reads a key once into its parts, so no module tests a key's
prefix by hand. It lives with the records, at the bottom of the package, because datasets
write these keys and the store reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "HUMAN",
    "RECORDED",
    "LabelKey",
    "annotator_key",
    "is_human",
    "is_stored",
    "protocol_key",
    "recorded_key",
]

HUMAN = "human"
RECORDED = "recorded"
_ANNOTATOR = f"{HUMAN}:"
_PROTOCOL = f"{HUMAN}[protocol="
_RECORDED = f"{RECORDED}:"

Kind = Literal["human", "recorded", "component"]


@dataclass(frozen=True)
class LabelKey:
    """A stored key read into its parts.

    Attributes:
        text: The key as stored.
        kind: ``human`` (any human label), ``recorded`` (a score or a judge's
            label the dataset shipped) or ``component`` (made by a labeler or
            detector here).
        annotator: The annotator of a ``human:<annotator>`` key, else ``None``.
        protocol: The protocol of a ``human[protocol=<name>]`` key, else ``None``.
        name: For ``recorded:<name>``, the name; else ``None``.
    """

    text: str
    kind: Kind
    annotator: str | None = None
    protocol: str | None = None
    name: str | None = None

    @classmethod
    def parse(cls, key: str) -> LabelKey:
        """Read ``key``; any key that is not human or recorded is a component key."""
        if key == HUMAN:
            return cls(key, "human")
        if key.startswith(_ANNOTATOR):
            return cls(key, "human", annotator=key[len(_ANNOTATOR) :])
        if key.startswith(_PROTOCOL) and key.endswith("]"):
            return cls(key, "human", protocol=key[len(_PROTOCOL) : -1])
        if key.startswith(_RECORDED):
            return cls(key, "recorded", name=key[len(_RECORDED) :])
        return cls(key, "component")

    @property
    def is_human(self) -> bool:
        """Whether the key names human labels (aggregate, protocol or one annotator)."""
        return self.kind == "human"

    @property
    def is_annotator(self) -> bool:
        """Whether the key names one annotator's labels (``human:<annotator>``)."""
        return self.annotator is not None

    @property
    def is_human_aggregate(self) -> bool:
        """Whether the key names an aggregate human label (``human`` or ``human[protocol=…]``)."""
        return self.is_human and self.annotator is None

    @property
    def is_recorded(self) -> bool:
        """Whether the key names a score or label the dataset shipped (``recorded:<name>``)."""
        return self.kind == "recorded"


def is_human(key: str) -> bool:
    """Whether ``key`` names human labels: ``LabelKey.parse(key).is_human``, for ``map``."""
    return LabelKey.parse(key).is_human


def is_stored(key: str) -> bool:
    """Whether ``key`` names what a dataset shipped (``human…``, ``recorded…``), not a component."""
    return key == RECORDED or LabelKey.parse(key).kind != "component"


def annotator_key(annotator: str) -> str:
    """The key of one annotator's labels: ``human:<annotator>``."""
    return f"{_ANNOTATOR}{annotator}"


def protocol_key(protocol: str) -> str:
    """The key of the aggregate human label under a protocol: ``human[protocol=<name>]``."""
    return f"{_PROTOCOL}{protocol}]"


def recorded_key(name: str) -> str:
    """The key of a score or a judge's label a dataset shipped: ``recorded:<name>``."""
    return f"{_RECORDED}{name}"
