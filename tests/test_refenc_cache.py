"""Reference-code cache against a real redis-server: keys, binary values, single-flight, outage and recovery."""

import asyncio
import io
import logging
from collections.abc import Iterator

import numpy as np
import pytest
import redis
import soundfile as sf
from omni.services.refenc.cache import (
    LocalReferenceCache,
    RedisReferenceCache,
    ReferenceEncoding,
    encoder_fingerprint,
    open_reference_cache,
    pack_entry,
    unpack_entry,
)
from omni.services.refenc.redis_client import redis_client

from omni.audio import prepare_reference_audio
from tests.redis_server import RedisServer

FP = encoder_fingerprint("rev-a", 16, with_xvector=True)


class CountingEncoder:
    """The injected encode function: deterministic codes from the PCM, counts its calls, stays in flight
    for a few event-loop turns so concurrent requests overlap."""

    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail

    async def __call__(self, pcm: np.ndarray) -> ReferenceEncoding:
        self.calls += 1
        await asyncio.sleep(0.05)
        if self.fail:
            raise RuntimeError("encoder failed")
        frames = max(1, len(pcm) // 1920)
        seed = int(np.abs(pcm[:100]).sum() * 1000) % 2048
        codes = (np.arange(frames * 16).reshape(frames, 16) + seed) % 2048
        return ReferenceEncoding(codes, np.linspace(-1, 1, 8, dtype=np.float32) * (1 + seed))


def _audio(fmt: str, seconds: float = 1.5, sr: int = 16000, freq: float = 220.0) -> bytes:
    """The same 16-bit recording in any container (int16 in, so no container-specific float rounding)."""
    t = np.arange(int(seconds * sr)) / sr
    pcm16 = np.round(0.3 * 32767 * np.sin(2 * np.pi * freq * t)).astype(np.int16)
    buffer = io.BytesIO()
    sf.write(buffer, pcm16, sr, format=fmt, subtype="PCM_16")
    return buffer.getvalue()


def _value(cache, name: str, labels: dict | None = None) -> float:
    return cache.metrics.registry.get_sample_value(f"omni_refenc_{name}", labels or {}) or 0.0


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer() as s:
        yield s


@pytest.fixture
def url(server: RedisServer) -> str:
    redis.Redis.from_url(server.url).flushall()
    return server.url


def _entries(url: str) -> list[bytes]:
    return [k for k in redis.Redis.from_url(url).keys("omni:refenc:*") if b":lock:" not in k]


def test_entry_is_compact_binary_and_validated() -> None:
    enc = ReferenceEncoding(np.arange(3 * 16).reshape(3, 16), np.arange(64, dtype=np.float32))
    data = pack_entry(enc)
    assert len(data) == 16 + 3 * 16 * 2 + 64 * 4
    back = unpack_entry(data)
    np.testing.assert_array_equal(back.codes, enc.codes)
    np.testing.assert_array_equal(back.xvector, enc.xvector)
    assert unpack_entry(pack_entry(ReferenceEncoding(enc.codes))).xvector is None
    with pytest.raises(ValueError, match="header says"):
        unpack_entry(data[:-1])
    with pytest.raises(ValueError, match="header"):
        unpack_entry(b"JSON" + data[4:])
    with pytest.raises(ValueError, match="frames"):
        ReferenceEncoding(np.zeros((3, 8), dtype=np.int64))


def test_key_depends_on_pcm_and_fingerprint() -> None:
    wav, flac = prepare_reference_audio(_audio("WAV")), prepare_reference_audio(_audio("FLAC"))
    cache = LocalReferenceCache(FP)
    assert cache.key(wav) == cache.key(flac)
    assert cache.key(wav) != cache.key(prepare_reference_audio(_audio("WAV", freq=330.0)))
    assert LocalReferenceCache(encoder_fingerprint("rev-b", 16, True)).key(wav) != cache.key(wav)
    assert encoder_fingerprint("rev-a", 8, True) != FP and encoder_fingerprint("rev-a", 16, False) != FP


def test_redis_hit_miss_wav_flac_one_entry_and_ttl(url: str) -> None:
    async def body() -> str:
        cache = RedisReferenceCache(redis_client(url), FP, ttl_s=3600)
        encode = CountingEncoder()
        first = await cache.get_or_encode(prepare_reference_audio(_audio("WAV")), encode)
        second = await cache.get_or_encode(prepare_reference_audio(_audio("FLAC")), encode)
        assert (first.hit, second.hit, encode.calls) == (False, True, 1)
        assert first.key == second.key
        np.testing.assert_array_equal(first.encoding.codes, second.encoding.codes)
        np.testing.assert_array_equal(first.encoding.xvector, second.encoding.xvector)
        assert _value(cache, "cache_lookups_total", {"result": "hit"}) == 1
        assert _value(cache, "cache_lookups_total", {"result": "miss"}) == 1
        # A cache with another encoder fingerprint misses on the same audio.
        other = RedisReferenceCache(redis_client(url), encoder_fingerprint("rev-b", 16, True))
        third = await other.get_or_encode(prepare_reference_audio(_audio("WAV")), encode)
        assert (third.hit, encode.calls) == (False, 2) and third.key != first.key
        await cache.close()
        await other.close()
        return first.key

    key = asyncio.run(body())
    assert len(_entries(url)) == 2
    ttl = redis.Redis.from_url(url).pttl(f"omni:refenc:{key}")
    assert 0 < ttl <= 3600 * 1000


def _concurrent(caches, pcm: np.ndarray, encode, n: int):
    async def body():
        return await asyncio.gather(*(caches[i % len(caches)].get_or_encode(pcm, encode) for i in range(n)))

    return body()


def test_single_flight_20_concurrent_local_and_redis(url: str) -> None:
    pcm = prepare_reference_audio(_audio("WAV"))

    async def body() -> None:
        local, encode = LocalReferenceCache(FP), CountingEncoder()
        results = await _concurrent([local], pcm, encode, 20)
        assert encode.calls == 1 and sum(not r.hit for r in results) == 1 and len(local) == 1
        # Two replicas (separate clients, separate in-process maps) share one encode through the Redis lock.
        replicas = [RedisReferenceCache(redis_client(url), FP, lock_poll_s=0.01) for _ in range(2)]
        encode = CountingEncoder()
        results = await _concurrent(replicas, pcm, encode, 20)
        assert encode.calls == 1 and sum(not r.hit for r in results) == 1
        assert all(np.array_equal(r.encoding.codes, results[0].encoding.codes) for r in results)
        assert _value(replicas[0], "cache_lookups_total", {"result": "shared"}) == 9
        for r in replicas:
            await r.close()

    asyncio.run(body())
    assert len(_entries(url)) == 1
    assert not redis.Redis.from_url(url).keys("omni:refenc:lock:*")


def test_dead_lock_holder_is_taken_over(url: str) -> None:
    pcm = prepare_reference_audio(_audio("WAV"))

    async def body() -> None:
        cache = RedisReferenceCache(redis_client(url), FP, lock_poll_s=0.01)
        # A replica took the lock and died: nobody releases it, it expires after its PX.
        await cache.client.set(f"omni:refenc:lock:{cache.key(pcm)}", "dead-replica", px=300)
        encode = CountingEncoder()
        result = await cache.get_or_encode(pcm, encode)
        assert (result.hit, encode.calls) == (False, 1)
        assert (await cache.get_or_encode(pcm, encode)).hit
        await cache.close()

    asyncio.run(body())


def test_lock_is_renewed_while_a_slow_encode_runs(url: str) -> None:
    """An encode that takes several lock TTLs: the holder keeps renewing its lock, so the other replica waits
    for the result instead of taking the expired lock and encoding the same audio again."""
    pcm = prepare_reference_audio(_audio("WAV"))

    class SlowEncoder(CountingEncoder):
        async def __call__(self, pcm: np.ndarray) -> ReferenceEncoding:
            await asyncio.sleep(4.5)  # three lock TTLs
            return await super().__call__(pcm)

    async def body() -> None:
        # TTL 1.5 s, renewed every 0.5 s: wide enough that a loaded 2-core CI machine cannot starve the renewal.
        a, b = (RedisReferenceCache(redis_client(url), FP, lock_ttl_s=1.5, lock_poll_s=0.01) for _ in range(2))
        encode = SlowEncoder()
        first = asyncio.ensure_future(a.get_or_encode(pcm, encode))
        lock = f"omni:refenc:lock:{a.key(pcm)}"
        while not await a.client.exists(lock):
            await asyncio.sleep(0.01)
        second = await b.get_or_encode(pcm, encode)
        assert (await first).hit is False and second.hit
        assert encode.calls == 1
        np.testing.assert_array_equal(second.encoding.codes, (await first).encoding.codes)
        assert not await a.client.exists(lock)
        await a.close()
        await b.close()

    asyncio.run(body())


def test_holder_storing_then_releasing_between_waiter_polls(url: str) -> None:
    """The holder stores its result and releases the lock right after the waiter saw no result but before it
    checks the lock: the waiter then takes the lock, and must find the stored result instead of encoding."""
    pcm = prepare_reference_audio(_audio("WAV"))

    class HolderFinishesAfterThisGet(RedisReferenceCache):
        finished = False

        async def get(self, key: str) -> ReferenceEncoding | None:
            stored = await super().get(key)
            if stored is None and not self.finished:
                self.finished = True
                await self.client.set(f"omni:refenc:{key}", pack_entry(ReferenceEncoding(np.ones((1, 16)))))
                await self.client.delete(f"omni:refenc:lock:{key}")
            return stored

    async def body() -> None:
        waiter = HolderFinishesAfterThisGet(redis_client(url), FP, lock_poll_s=0.001)
        await waiter.client.set(f"omni:refenc:lock:{waiter.key(pcm)}", "holder", px=10_000)
        encode = CountingEncoder()
        result = await waiter.get_or_encode(pcm, encode)
        assert result.hit and encode.calls == 0 and (result.encoding.codes == 1).all()
        await waiter.close()

    asyncio.run(body())


def test_encoder_error_reaches_every_waiter_and_is_not_cached(url: str) -> None:
    pcm = prepare_reference_audio(_audio("WAV"))

    async def body() -> None:
        cache = RedisReferenceCache(redis_client(url), FP)
        failing = CountingEncoder(fail=True)
        results = await asyncio.gather(*(cache.get_or_encode(pcm, failing) for _ in range(5)), return_exceptions=True)
        assert failing.calls == 1 and all(isinstance(r, RuntimeError) for r in results)
        good = CountingEncoder()
        assert not (await cache.get_or_encode(pcm, good)).hit and good.calls == 1
        await cache.close()

    asyncio.run(body())


def test_outage_degrades_to_uncached_and_recovers(caplog: pytest.LogCaptureFixture, tmp_path) -> None:
    pcm = prepare_reference_audio(_audio("WAV"))
    server = RedisServer(tmp_path / "redis").start()
    try:

        async def body() -> None:
            cache = RedisReferenceCache(redis_client(server.url, timeout_s=0.5), FP, retry_s=0.0)
            encode = CountingEncoder()
            assert not (await cache.get_or_encode(pcm, encode)).hit
            # Restart: pooled connections go stale, the next call reconnects without an error.
            server.stop()
            server.start()
            assert (await cache.get_or_encode(pcm, encode)).hit
            assert _value(cache, "cache_redis_errors_total", {"op": "get"}) == 0
            # Outage: every request is encoded, uncached, and says so once in the log and in the metrics.
            server.stop()
            with caplog.at_level(logging.WARNING, logger="omni.refenc.cache"):
                other = prepare_reference_audio(_audio("WAV", freq=330.0))
                r1 = await cache.get_or_encode(other, encode)
                r2 = await cache.get_or_encode(other, encode)
            assert (r1.hit, r2.hit, encode.calls) == (False, False, 3)
            assert not cache.available and _value(cache, "cache_redis_up") == 0
            assert _value(cache, "cache_redis_errors_total", {"op": "get"}) >= 2
            assert sum("redis unavailable" in r.message for r in caplog.records) == 1
            # Redis returns (same data dir, AOF): the old entry is there and new entries are stored again.
            server.start()
            assert (await cache.get_or_encode(pcm, encode)).hit
            assert cache.available and _value(cache, "cache_redis_up") == 1
            assert not (await cache.get_or_encode(other, encode)).hit
            assert (await cache.get_or_encode(other, encode)).hit and encode.calls == 4
            await cache.close()

        asyncio.run(body())
    finally:
        server.close()


def test_local_lru_bounds_and_ttl() -> None:
    async def body() -> None:
        def enc(i: int) -> ReferenceEncoding:
            return ReferenceEncoding(np.full((2, 16), i), np.zeros(4, dtype=np.float32))

        size = enc(0).nbytes
        cache = LocalReferenceCache(FP, max_entries=3, max_bytes=100 * size)
        for i in range(3):
            await cache.put(f"k{i}", enc(i))
        assert await cache.get("k0") is not None  # k0 becomes most recent; k1 is now the oldest
        await cache.put("k3", enc(3))
        assert [await cache.get(f"k{i}") is not None for i in range(4)] == [True, False, True, True]
        by_bytes = LocalReferenceCache(FP, max_entries=100, max_bytes=2 * size)
        for i in range(3):
            await by_bytes.put(f"k{i}", enc(i))
        assert len(by_bytes) == 2 and await by_bytes.get("k0") is None
        aging = LocalReferenceCache(FP, ttl_s=60)
        await aging.put("k", enc(1))
        stored_at, value = aging._entries["k"]
        aging._entries["k"] = (stored_at - 61, value)
        assert await aging.get("k") is None and len(aging) == 0

    asyncio.run(body())


def test_open_reference_cache_picks_backend(caplog: pytest.LogCaptureFixture, url: str) -> None:
    with caplog.at_level(logging.INFO, logger="omni.refenc.cache"):
        assert isinstance(open_reference_cache(None, FP, max_entries=4), LocalReferenceCache)
        assert isinstance(open_reference_cache(url, FP), RedisReferenceCache)
    assert any("in-process LRU" in r.message for r in caplog.records)


def test_redis_refusing_writes_degrades_to_uncached(url: str) -> None:
    """A full Redis under `noeviction` refuses SET with an OOM error: the request still gets its encoding."""
    pcm = prepare_reference_audio(_audio("WAV"))
    admin = redis.Redis.from_url(url)
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", "1")
    try:

        async def body() -> None:
            cache = RedisReferenceCache(redis_client(url), FP)
            encode = CountingEncoder()
            first = await cache.get_or_encode(pcm, encode)
            second = await cache.get_or_encode(pcm, encode)
            assert (first.hit, second.hit, encode.calls) == (False, False, 2)
            assert _value(cache, "cache_redis_errors_total", {"op": "lock"}) == 2
            assert cache.available  # refused writes are not an outage
            await cache.close()

        asyncio.run(body())
    finally:
        admin.config_set("maxmemory", "0")
    assert _entries(url) == []
