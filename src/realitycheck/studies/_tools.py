"""What every study uses to read keys and write findings.

These are re-exported by :mod:`realitycheck.studies`, so a study in a
subpackage imports them from there. Statistics live in
:mod:`realitycheck.metrics` and :mod:`realitycheck.analysis`, not here.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterable, Iterator

from realitycheck.errors import InvalidInputError
from realitycheck.records.keys import is_human
from realitycheck.registry import parse_key

__all__ = ["automatic_labelers", "base_name", "fmt", "quiet"]


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence undefined-metric warnings inside the block (the tables show NaN instead)."""
    from realitycheck.metrics import UndefinedMetricWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        yield


def base_name(key: str) -> str:
    """The registered name of a component key (``rouge_l[threshold=0.5]`` -> ``rouge_l``)."""
    try:
        return parse_key(key)[0]
    except InvalidInputError:
        return key


def automatic_labelers(keys: Iterable[str], reference: str) -> list[str]:
    """Labeler keys that are neither human labels nor the reference, sorted."""
    return sorted(k for k in keys if k != reference and not is_human(k))


def fmt(value: float | None, digits: int = 3, *, signed: bool = False) -> str:
    """Format a number for a finding; ``n/a`` for None, NaN or infinity."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
