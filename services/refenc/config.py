"""Settings of the reference-encoder service (flags, OMNI_REFENC_* env, the `refenc:` section of a profile)."""

import dataclasses

from omni.services.common.config import ServiceConfig, option


@dataclasses.dataclass
class RefencConfig(ServiceConfig):
    redis_url: str = option(
        "", "Redis URL for the shared cache and the voice registry ('' = in-process LRU, no registry)"
    )
    cache_ttl_s: float = option(7 * 24 * 3600.0, "lifetime of a cache entry in Redis, seconds")
    lock_ttl_s: float = option(30.0, "cross-replica encode lock lifetime, seconds (a dead holder blocks at most this)")
    local_cache_entries: int = option(1024, "entries of the in-process LRU used without Redis")
    max_batch: int = option(8, "encode requests run together in one model call")
    max_wait_ms: float = option(5.0, "how long the first request of a batch waits for more, ms")
    max_voices: int = option(1000, "registered voices at most")

    def validate(self) -> "RefencConfig":
        if self.max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {self.max_batch}")
        if not 0 <= self.max_wait_ms < float("inf"):
            raise ValueError(f"max_wait_ms must be finite and >= 0, got {self.max_wait_ms}")
        if self.cache_ttl_s <= 0 or self.lock_ttl_s <= 0 or self.local_cache_entries < 1 or self.max_voices < 1:
            raise ValueError("cache_ttl_s, lock_ttl_s, local_cache_entries and max_voices must be positive")
        return self
