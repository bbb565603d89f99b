"""What the parsers of a run config's sub-tables need from the config reader.

The reader itself (``runner._config._Reader``) knows the file and the lines of
its keys; the ``[choice]`` and ``[executor]`` parsers only call these methods,
so they name every error with the file, line and field the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from realitycheck.errors import InvalidInputError

__all__ = ["ConfigReader"]


class ConfigReader(Protocol):
    """A run config's reader: typed access to its values, errors at their lines."""

    def fail(self, message: str, keys: Sequence[str | int]) -> InvalidInputError: ...

    def table(self, value: Any, keys: Sequence[str | int], allowed: Sequence[str]) -> dict: ...

    def typed(
        self, value: Any, kind: type | tuple[type, ...], keys: Sequence[str | int]
    ) -> Any: ...

    def build(self, keys: Sequence[str | int], make: Callable[[], Any]) -> Any: ...

    def path_of(self, value: str, keys: Sequence[str | int]) -> Path: ...
