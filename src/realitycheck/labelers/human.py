"""Human labels: read from the dataset, never computed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from realitycheck.errors import InvalidInputError
from realitycheck.labelers._base import Labeler, labeler
from realitycheck.params import InstanceOf, param
from realitycheck.records import Example, Label, Response

if TYPE_CHECKING:
    from realitycheck.backends import CallCache

__all__ = ["Human"]


@labeler("human")
@dataclass(frozen=True, kw_only=True)
class Human(Labeler):
    """The human judgements a dataset ships.

    Stored under ``human`` (the dataset's aggregate), ``human:<annotator>`` (one
    annotator) or ``human[protocol=<name>]`` (an aggregation protocol). They are
    written to a run when its dataset is loaded; this labeler only names them.

    Args:
        annotator: One annotator's labels instead of the aggregate.
    """

    annotator: str = param("", InstanceOf(str))
    needs: ClassVar[frozenset[str]] = frozenset({"recorded"})

    @property
    def key(self) -> str:
        """``human`` or ``human:<annotator>``."""
        return f"human:{self.annotator}" if self.annotator else "human"

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Human labels cannot be computed; they come with the dataset.

        Raises:
            InvalidInputError: Always.
        """
        raise InvalidInputError(
            "Human labels are read from the dataset when it is loaded into a run; "
            "they cannot be computed for new responses."
        )
