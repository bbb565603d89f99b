"""Model backends behind one protocol; each module registers its backend with a decorator."""

import sys
from collections.abc import Iterable

from realitycheck.backends._base import (
    CAPABILITIES,
    DECODINGS,
    REQUESTS,
    Backend,
    Dtype,
    Generation,
    GenerationRequest,
    PairScore,
    backend,
    backends,
    require,
    require_pairs,
    require_teacher_forcing,
    teacher_force,
)
from realitycheck.backends._cache import (
    CallCache,
    cached_generate,
    call_identity,
    default_cache_path,
)
from realitycheck.backends._cached_loglik import cached_loglik_tokens, loglik_key
from realitycheck.backends._chat import chat_text, continuation_start
from realitycheck.backends._names import server_name, server_of
from realitycheck.backends._pairs import (
    CONSISTENCY,
    PAIR_CLASSES,
    PAIRS,
    cached_pairs,
    config_label_names,
    pair_cache_key,
    pair_classes,
    pair_score,
)
from realitycheck.backends._schema import follows_schema, parsed_schema, reply_follows
from realitycheck.backends._usage import Usage, usage_of
from realitycheck.registry import Component


def warm_up(components: Iterable[Component]) -> None:
    """Let every backend the components hold start its set-up in the background.

    See :meth:`Backend.warm_up`; the stages call this before loading the data.
    """
    for component in components:
        for inner in (component, *component.nested()):
            if isinstance(inner, Backend):
                inner.warm_up()


def cancel_calls() -> int:
    """Cancel the server calls in flight on the process's shared call loop; return how many works.

    A stage stopped (Ctrl-C, a failed batch) while another thread waits on a
    batch of server calls calls this, so that batch stops too
    (:mod:`realitycheck.backends.openai._loop`). Imports nothing: with no
    call made yet there is nothing to cancel.
    """
    loop = sys.modules.get("realitycheck.backends.openai._loop")
    return int(loop.cancel_calls()) if loop is not None else 0


__all__ = [
    "Backend",
    "CAPABILITIES",
    "CONSISTENCY",
    "CallCache",
    "DECODINGS",
    "Dtype",
    "Generation",
    "GenerationRequest",
    "PAIRS",
    "PAIR_CLASSES",
    "PairScore",
    "REQUESTS",
    "Usage",
    "backend",
    "backends",
    "cached_generate",
    "cached_loglik_tokens",
    "cached_pairs",
    "call_identity",
    "cancel_calls",
    "chat_text",
    "config_label_names",
    "continuation_start",
    "default_cache_path",
    "follows_schema",
    "loglik_key",
    "pair_cache_key",
    "pair_classes",
    "pair_score",
    "parsed_schema",
    "reply_follows",
    "require",
    "require_pairs",
    "require_teacher_forcing",
    "server_name",
    "server_of",
    "teacher_force",
    "usage_of",
    "warm_up",
]
