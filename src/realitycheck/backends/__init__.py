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
)
from realitycheck.backends._cache import (
    CallCache,
    Usage,
    cached_generate,
    call_identity,
    default_cache_path,
    usage_of,
)
from realitycheck.backends._cached_loglik import cached_loglik_tokens, loglik_key

__all__ = [
    "CAPABILITIES",
    "DECODINGS",
    "Backend",
    "CallCache",
    "Generation",
    "GenerationRequest",
    "Usage",
    "backend",
    "backends",
    "cached_generate",
    "cached_loglik_tokens",
    "call_identity",
    "default_cache_path",
    "loglik_key",
    "require",
    "usage_of",
]
