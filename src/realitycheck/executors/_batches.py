"""How many items a stage puts in one task: the batch sizes every stage defaults to."""

from __future__ import annotations

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_CHOICE_BATCH_SIZE"]

DEFAULT_BATCH_SIZE = 16
"""(example, variant) pairs per stored batch, the unit a stage hands an executor; the
default of ``[run] batch_size`` (:class:`realitycheck.runner.RunSettings`), of
``generate --batch-size`` and of :func:`realitycheck.pipeline.generate`."""

DEFAULT_CHOICE_BATCH_SIZE = 32
"""Questions per stored batch when answering by likelihood: the default of ``choose
--batch-size`` and of :func:`realitycheck.pipeline.choose`."""
