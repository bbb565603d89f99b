"""Model backends behind one protocol; each module registers its backend with a decorator."""

from realitycheck.backends._base import (
    CAPABILITIES,
    DECODINGS,
    Backend,
    Generation,
    GenerationRequest,
    backend,
    backends,
    require,
    require_pairs,
)
from realitycheck.backends._cache import (
    CallCache,
    cached_generate,
    call_identity,
    default_cache_path,
)
from realitycheck.backends._cached_loglik import cached_loglik_tokens, loglik_key
from realitycheck.backends._hf_forward import require_teacher_forcing, teacher_force
from realitycheck.backends._names import server_name, server_of
from realitycheck.backends._pairs import (
    CONSISTENCY,
    PAIR_CLASSES,
    PairScore,
    cached_pairs,
    pair_cache_key,
    pair_classes,
    pair_score,
)
from realitycheck.backends._schema import follows_schema, reply_follows
from realitycheck.backends._usage import Usage, usage_of

__all__ = [
    "Backend",
    "CAPABILITIES",
    "CONSISTENCY",
    "CallCache",
    "DECODINGS",
    "Generation",
    "GenerationRequest",
    "PAIR_CLASSES",
    "PairScore",
    "Usage",
    "backend",
    "backends",
    "cached_generate",
    "cached_loglik_tokens",
    "cached_pairs",
    "call_identity",
    "default_cache_path",
    "follows_schema",
    "loglik_key",
    "pair_cache_key",
    "pair_classes",
    "pair_score",
    "reply_follows",
    "require",
    "require_pairs",
    "require_teacher_forcing",
    "server_name",
    "server_of",
    "teacher_force",
    "usage_of",
]
