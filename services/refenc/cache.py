"""Reference-code cache: one encoding per distinct recording, shared by every replica.

Key: sha256 of the decoded, resampled 24 kHz PCM (float32 LE) plus the encoder fingerprint (model revision,
quantizer count, front-end settings), so the same recording as WAV or FLAC shares an entry and another model
never does. Value: a small binary header, the codes as int16 LE and the x-vector as float32 LE.

Two implementations of one interface (`ReferenceCache`):
- `RedisReferenceCache`: shared, entries with a TTL (so a `volatile-lru` maxmemory policy evicts only cache
  entries, never registry voices). Redis errors degrade to uncached encoding with one log line and a metric,
  and Redis is tried again after `retry_s`, so the cache recovers by itself.
- `LocalReferenceCache`: an in-process LRU bounded by entries and bytes, for one-machine use.

`get_or_encode` is single-flight: identical audio in flight is encoded once per process (shared asyncio
task), and across replicas through a short Redis lock (`SET NX PX`); when the holder dies its lock expires
and a waiter takes over.
"""

import asyncio
import hashlib
import json
import logging
import struct
import time
import uuid
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np
import redis.asyncio as redis
from omni.services.common.metrics import MetricsServer
from omni.services.refenc.redis_client import REDIS_DOWN_ERRORS, redis_client

log = logging.getLogger("omni.refenc.cache")

NUM_CODEBOOKS = 16
SAMPLE_RATE = 24000
# Front-end settings that change the encoding of the same PCM; part of every fingerprint.
FRONT_END = {
    "sample_rate": SAMPLE_RATE,
    "downmix": "mean",
    "resampler": "soxr_hq",
    "xvector_mel": {"n_fft": 1024, "hop": 256, "win": 1024, "mels": 128, "fmin": 0, "fmax": 12000},
}


@dataclass(frozen=True)
class ReferenceEncoding:
    """Codes int16 [frames, 16] and, for Base models, the x-vector float32 [dim]."""

    codes: np.ndarray
    xvector: np.ndarray | None = None

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes)
        if codes.ndim != 2 or codes.shape[1] != NUM_CODEBOOKS or codes.shape[0] == 0:
            raise ValueError(f"codes must be [frames > 0, {NUM_CODEBOOKS}], got {codes.shape}")
        if codes.size and (codes.min() < 0 or codes.max() > np.iinfo(np.int16).max):
            raise ValueError("codes must be in [0, 32767]")
        object.__setattr__(self, "codes", codes.astype(np.int16))
        if self.xvector is not None:
            xvector = np.asarray(self.xvector, dtype=np.float32)
            if xvector.ndim != 1 or xvector.size == 0:
                raise ValueError(f"x-vector must be [dim > 0], got {xvector.shape}")
            object.__setattr__(self, "xvector", xvector)

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + (0 if self.xvector is None else self.xvector.nbytes)


# The injected encoder: 24 kHz mono float32 PCM -> its encoding (the service batches behind it).
EncodeFn = Callable[[np.ndarray], Awaitable[ReferenceEncoding]]

_HEADER = struct.Struct("<4sHHII")  # magic, version, codebooks, frames, x-vector dim (0: none)
_MAGIC, _VERSION = b"ORC1", 1


def pack_entry(encoding: ReferenceEncoding) -> bytes:
    dim = 0 if encoding.xvector is None else encoding.xvector.size
    header = _HEADER.pack(_MAGIC, _VERSION, NUM_CODEBOOKS, encoding.codes.shape[0], dim)
    xvector = b"" if encoding.xvector is None else encoding.xvector.astype("<f4").tobytes()
    return header + encoding.codes.astype("<i2").tobytes() + xvector


def unpack_entry(data: bytes) -> ReferenceEncoding:
    if len(data) < _HEADER.size:
        raise ValueError(f"cache entry of {len(data)} bytes is shorter than its header")
    magic, version, codebooks, frames, dim = _HEADER.unpack_from(data)
    if magic != _MAGIC or version != _VERSION or codebooks != NUM_CODEBOOKS:
        raise ValueError(f"cache entry has header {magic!r} v{version} with {codebooks} codebooks")
    codes_end = _HEADER.size + frames * codebooks * 2
    if len(data) != codes_end + dim * 4:
        raise ValueError(f"cache entry is {len(data)} bytes, its header says {codes_end + dim * 4}")
    codes = np.frombuffer(data, dtype="<i2", count=frames * codebooks, offset=_HEADER.size).reshape(frames, codebooks)
    xvector = np.frombuffer(data, dtype="<f4", count=dim, offset=codes_end) if dim else None
    return ReferenceEncoding(codes.copy(), None if xvector is None else xvector.copy())


def encoder_fingerprint(model_revision: str, num_quantizers: int, with_xvector: bool) -> str:
    """Everything besides the PCM that determines an encoding, hashed (32 hex chars)."""
    if not model_revision:
        raise ValueError("model_revision must be non-empty")
    settings = {
        "model_revision": model_revision,
        "num_quantizers": num_quantizers,
        "with_xvector": with_xvector,
        **FRONT_END,
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:32]


def cache_key(pcm24k: np.ndarray, fingerprint: str) -> str:
    pcm = np.asarray(pcm24k)
    if pcm.ndim != 1 or pcm.dtype != np.float32:
        raise ValueError(f"cache keys are taken over mono float32 PCM, got {pcm.dtype} {pcm.shape}")
    digest = hashlib.sha256(fingerprint.encode() + b"\n")
    digest.update(pcm.astype("<f4", copy=False).tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheResult:
    encoding: ReferenceEncoding
    key: str
    # False only for the request whose call ran the encoder; a request that shared another's in-flight
    # encoding or found the entry stored counts as a hit.
    hit: bool


class ReferenceCache(ABC):
    """Encodings by content key, with single-flight `get_or_encode`."""

    backend = "none"

    def __init__(self, fingerprint: str, metrics: MetricsServer | None = None) -> None:
        self.fingerprint = fingerprint
        self.metrics = metrics or MetricsServer("omni_refenc")
        self._lookups = self.metrics.counter(
            "cache_lookups_total", "Reference cache lookups by result (hit, miss, shared in-flight)", ("result",)
        )
        self._inflight: dict[str, asyncio.Task] = {}

    @abstractmethod
    async def get(self, key: str) -> ReferenceEncoding | None: ...

    @abstractmethod
    async def put(self, key: str, encoding: ReferenceEncoding) -> None: ...

    def key(self, pcm24k: np.ndarray) -> str:
        return cache_key(pcm24k, self.fingerprint)

    async def get_or_encode(self, pcm24k: np.ndarray, encode: EncodeFn) -> CacheResult:
        key = self.key(pcm24k)
        task = self._inflight.get(key)
        shared = task is not None
        if task is None:
            # Registered before the first await, so every identical request that arrives later joins it.
            # A task of its own, so a cancelled caller does not cancel the work the others wait for.
            task = asyncio.ensure_future(self._resolve(key, pcm24k, encode))
            self._inflight[key] = task
            task.add_done_callback(lambda _: self._inflight.pop(key, None))
        else:
            self._lookups.labels("shared").inc()
        encoding, encoded = await asyncio.shield(task)
        return CacheResult(encoding, key, hit=shared or not encoded)

    async def _resolve(self, key: str, pcm24k: np.ndarray, encode: EncodeFn) -> tuple[ReferenceEncoding, bool]:
        """The stored encoding, or a new one; returns (encoding, whether this call ran the encoder)."""
        stored = await self.get(key)
        if stored is not None:
            self._lookups.labels("hit").inc()
            return stored, False
        self._lookups.labels("miss").inc()
        return await self._fill(key, pcm24k, encode)

    async def _fill(self, key: str, pcm24k: np.ndarray, encode: EncodeFn) -> tuple[ReferenceEncoding, bool]:
        encoding = await encode(pcm24k)
        await self.put(key, encoding)
        return encoding, True

    async def close(self) -> None:
        return None


class LocalReferenceCache(ReferenceCache):
    """In-process LRU bounded by entry count and bytes; entries older than `ttl_s` are misses."""

    backend = "local"

    def __init__(
        self,
        fingerprint: str,
        max_entries: int = 1024,
        max_bytes: int = 256 * 1024 * 1024,
        ttl_s: float | None = None,
        metrics: MetricsServer | None = None,
    ) -> None:
        super().__init__(fingerprint, metrics)
        if max_entries <= 0 or max_bytes <= 0:
            raise ValueError("max_entries and max_bytes must be positive")
        self.max_entries, self.max_bytes, self.ttl_s = max_entries, max_bytes, ttl_s
        self._entries: OrderedDict[str, tuple[float, ReferenceEncoding]] = OrderedDict()
        self._bytes = 0
        self._size = self.metrics.gauge("cache_local_entries", "Entries in the in-process reference cache")

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: str) -> ReferenceEncoding | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        stored_at, encoding = entry
        if self.ttl_s is not None and time.monotonic() - stored_at > self.ttl_s:
            self._remove(key)
            return None
        self._entries.move_to_end(key)
        return encoding

    async def put(self, key: str, encoding: ReferenceEncoding) -> None:
        if encoding.nbytes > self.max_bytes:
            return
        if key in self._entries:
            self._remove(key)
        self._entries[key] = (time.monotonic(), encoding)
        self._bytes += encoding.nbytes
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._remove(next(iter(self._entries)))
        self._size.set(len(self._entries))

    def _remove(self, key: str) -> None:
        _, encoding = self._entries.pop(key)
        self._bytes -= encoding.nbytes
        self._size.set(len(self._entries))


_DOWN = object()  # result of a Redis call that failed or was skipped while Redis is down

# Deletes the lock only if we still hold it (it may have expired and been taken by another replica).
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
# Extends the lock only if we still hold it.
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
)


class RedisReferenceCache(ReferenceCache):
    """Shared cache in Redis with a TTL per entry and a cross-replica encode lock."""

    backend = "redis"

    def __init__(
        self,
        client: redis.Redis,
        fingerprint: str,
        ttl_s: float = 7 * 24 * 3600,
        lock_ttl_s: float = 30.0,
        lock_poll_s: float = 0.05,
        retry_s: float = 1.0,
        prefix: str = "omni:refenc:",
        metrics: MetricsServer | None = None,
    ) -> None:
        super().__init__(fingerprint, metrics)
        self.client = client
        self.ttl_ms = int(ttl_s * 1000)
        self.lock_ttl_ms = int(lock_ttl_s * 1000)
        self.lock_poll_s = lock_poll_s
        self.retry_s = retry_s
        self.prefix = prefix
        self._down = False
        self._retry_at = 0.0
        self._errors = self.metrics.counter("cache_redis_errors_total", "Failed Redis calls by operation", ("op",))
        self._up = self.metrics.gauge("cache_redis_up", "1 while the last Redis call succeeded, else 0")
        self._up.set(1)
        self._release = client.register_script(_RELEASE)
        self._renew = client.register_script(_RENEW)

    @property
    def available(self) -> bool:
        return not self._down

    async def _call(self, op: str, make: Callable[[], Awaitable]) -> object:
        """Run one Redis call; while Redis is down (and until `retry_s` has passed) return _DOWN instead."""
        if self._down and time.monotonic() < self._retry_at:
            return _DOWN
        try:
            result = await make()
        except REDIS_DOWN_ERRORS as e:
            self._errors.labels(op).inc()
            self._retry_at = time.monotonic() + self.retry_s
            if not self._down:
                self._down = True
                self._up.set(0)
                log.warning("redis unavailable (%s: %s); reference cache runs uncached until it returns", op, e)
            return _DOWN
        except redis.RedisError as e:  # e.g. OOM under a noeviction policy: this call is skipped, Redis stays up
            self._errors.labels(op).inc()
            log.warning("redis %s failed: %s", op, e)
            return _DOWN
        if self._down:
            self._down = False
            self._up.set(1)
            log.warning("redis is back; reference cache enabled again")
        return result

    async def get(self, key: str) -> ReferenceEncoding | None:
        data = await self._call("get", lambda: self.client.get(self.prefix + key))
        if data is _DOWN or data is None:
            return None
        try:
            return unpack_entry(data)
        except ValueError as e:
            log.warning("dropping unreadable cache entry %s: %s", key, e)
            return None

    async def put(self, key: str, encoding: ReferenceEncoding) -> None:
        await self._call("set", lambda: self.client.set(self.prefix + key, pack_entry(encoding), px=self.ttl_ms))

    async def _fill(self, key: str, pcm24k: np.ndarray, encode: EncodeFn) -> tuple[ReferenceEncoding, bool]:
        lock, token = f"{self.prefix}lock:{key}", uuid.uuid4().hex
        holding = False
        while True:
            acquired = await self._call("lock", lambda: self.client.set(lock, token, nx=True, px=self.lock_ttl_ms))
            if acquired is _DOWN:
                break  # uncached: encode without a lock
            if acquired:
                holding = True
                break
            outcome = await self._wait_for_holder(key, lock)
            if isinstance(outcome, ReferenceEncoding):
                return outcome, False
            if outcome is _DOWN:
                break
        try:
            # The previous holder may have stored the result just before releasing its lock.
            stored = await self.get(key) if holding else None
            if stored is not None:
                return stored, False
            renewal = asyncio.ensure_future(self._keep_lock(lock, token)) if holding else None
            try:
                encoding = await encode(pcm24k)
            finally:
                if renewal is not None:
                    renewal.cancel()
            await self.put(key, encoding)
            return encoding, True
        finally:
            if holding:
                await self._call("unlock", lambda: self._release(keys=[lock], args=[token]))

    async def _keep_lock(self, lock: str, token: str) -> None:
        """Renew our lock every third of its TTL until cancelled (the encode finished) or lost."""
        while True:
            await asyncio.sleep(self.lock_ttl_ms / 3000.0)
            renewed = await self._call("lock_renew", lambda: self._renew(keys=[lock], args=[token, self.lock_ttl_ms]))
            if renewed is not _DOWN and not renewed:
                log.warning("encode lock %s was lost while encoding; another replica may encode the same audio", lock)
                return

    async def _wait_for_holder(self, key: str, lock: str) -> ReferenceEncoding | object | None:
        """Another replica holds the lock: its stored result, or None once the lock is gone (released
        without a result, or expired because the holder died), or _DOWN."""
        while True:
            await asyncio.sleep(self.lock_poll_s)
            stored = await self.get(key)
            if stored is not None:
                return stored
            held = await self._call("lock", lambda: self.client.exists(lock))
            if held is _DOWN:
                return _DOWN
            if not held:
                return None

    async def close(self) -> None:
        await self.client.aclose()


def open_reference_cache(redis_url: str | None, fingerprint: str, **options) -> ReferenceCache:
    """The Redis cache when a URL is configured, else the in-process LRU (and a log line saying so)."""
    metrics = options.pop("metrics", None)
    if redis_url:
        log.info("reference cache: redis at %s", redis_url)
        return RedisReferenceCache(redis_client(redis_url), fingerprint, metrics=metrics, **options)
    log.warning("reference cache: no redis URL configured, using an in-process LRU (not shared between replicas)")
    return LocalReferenceCache(fingerprint, metrics=metrics, **options)
