"""The asyncio Redis client the reference encoder uses: short timeouts, one quick retry.

A down Redis must fail fast (the cache then degrades to uncached encoding), and the one retry without
back-off replaces a pooled connection that went stale when Redis restarted.
"""

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError, TimeoutError

# What "Redis is unreachable" looks like to callers (OSError: refused or reset sockets).
REDIS_DOWN_ERRORS = (ConnectionError, TimeoutError, OSError)


def redis_client(url: str, timeout_s: float = 1.0) -> redis.Redis:
    return redis.Redis.from_url(
        url,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(NoBackoff(), 1),
        retry_on_error=[ConnectionError, TimeoutError],
    )
