"""Built-in labelers; one module per component family.

Each module registers its components with a decorator; the registry imports
the modules when it is first asked for a name. The judges' shared parts
(:class:`Judge`, :func:`plan_calls`) load on first use, so importing the
registry stays cheap.

:func:`parse_verdict` (and :func:`read_verdict`, which also says why a reply
gives no verdict) is the judges' reader of an LLM's reply, public for anyone
writing a judge: it reads the reply's conclusion (a JSON field, a line such as
``Final classification: X``, a concluding sentence, a bare verdict), never a
verdict word in its reasoning, and returns ``None`` for a negated, hedged,
two-verdict or cut-off reply::

    >>> from realitycheck.labelers import parse_verdict
    >>> parse_verdict("Dates differ. Verdict: incorrect", choices=("correct", "incorrect"))
    'incorrect'
    >>> parse_verdict("The answer is not correct.", choices=("correct", "incorrect")) is None
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from realitycheck.labelers._base import Labeler, labeler, labelers
from realitycheck.registry import lazy_names
from realitycheck.verdicts import Reading, parse_verdict, read_verdict

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from realitycheck.labelers._dry_run import CallPlan, estimate_tokens, plan_calls
    from realitycheck.labelers._judge import Judge

__all__ = [
    "CallPlan",
    "Judge",
    "Labeler",
    "Reading",
    "estimate_tokens",
    "labeler",
    "labelers",
    "parse_verdict",
    "plan_calls",
    "read_verdict",
]

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "CallPlan": "_dry_run",
        "estimate_tokens": "_dry_run",
        "plan_calls": "_dry_run",
        "Judge": "_judge",
    },
    globals(),
)
