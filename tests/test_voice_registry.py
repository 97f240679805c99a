"""Voice registry against a real redis-server: CRUD, validation, caps, duplicates, durability after kill -9."""

import asyncio
import hashlib
import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import redis
import soundfile as sf
from omni.services.refenc.redis_client import redis_client
from omni.services.refenc.registry import (
    RegistryError,
    RegistryFullError,
    RegistryUnavailableError,
    VoiceExistsError,
    VoiceNotFoundError,
    VoiceRegistry,
)

from omni.audio import AudioError
from tests.redis_server import RedisServer


def _audio(seconds: float = 1.5, sr: int = 16000, fill: float | None = None, subtype: str = "PCM_16") -> bytes:
    n = int(seconds * sr)
    x = 0.3 * np.sin(2 * np.pi * 200 * np.arange(n) / sr) if fill is None else np.full(n, fill)
    buffer = io.BytesIO()
    sf.write(buffer, x.astype(np.float32), sr, format="WAV", subtype=subtype)
    return buffer.getvalue()


AUDIO = _audio()


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer() as s:
        yield s


@pytest.fixture
def url(server: RedisServer) -> str:
    redis.Redis.from_url(server.url).flushall()
    return server.url


def _run(url: str, body, **options):
    async def main():
        registry = VoiceRegistry(redis_client(url), **options)
        try:
            return await body(registry)
        finally:
            await registry.client.aclose()

    return asyncio.run(main())


def test_register_get_list_delete(url: str) -> None:
    async def body(reg: VoiceRegistry) -> None:
        voice, pcm = await reg.register("alice", AUDIO, consent_id="c-1", ref_text="Hello.", description="calm")
        assert pcm.dtype == np.float32 and pcm.shape == (36000,)  # 1.5 s resampled to 24 kHz
        assert (voice.name, voice.ref_text, voice.consent_id, voice.description) == ("alice", "Hello.", "c-1", "calm")
        assert voice.duration_s == 1.5 and voice.audio_sha256 == hashlib.sha256(AUDIO).hexdigest()
        assert voice.created_unix_ms > 1_600_000_000_000
        assert await reg.get("alice") == voice
        assert await reg.get_audio("alice") == AUDIO
        await reg.register("bob", _audio(2.0), consent_id="c-2")
        assert [v.name for v in await reg.list_voices()] == ["alice", "bob"]
        assert reg.metrics.registry.get_sample_value("omni_refenc_registry_voices") == 2
        await reg.delete("alice")
        assert [v.name for v in await reg.list_voices()] == ["bob"] and await reg.count() == 1
        for call in (reg.get("alice"), reg.get_audio("alice"), reg.delete("alice")):
            with pytest.raises(VoiceNotFoundError, match="alice"):
                await call

    _run(url, body)


def test_duplicates_rejected_unless_replace_and_concurrent_registration(url: str) -> None:
    async def body(reg: VoiceRegistry) -> None:
        await reg.register("v", AUDIO, consent_id="c-1")
        with pytest.raises(VoiceExistsError, match="already registered"):
            await reg.register("v", _audio(2.0), consent_id="c-2")
        assert (await reg.get("v")).consent_id == "c-1"
        replaced, _ = await reg.register("v", _audio(2.0), consent_id="c-2", replace=True)
        assert await reg.get("v") == replaced and replaced.duration_s == 2.0 and await reg.count() == 1
        results = await asyncio.gather(
            *(reg.register("race", AUDIO, consent_id=f"c-{i}") for i in range(5)), return_exceptions=True
        )
        assert sum(not isinstance(r, Exception) for r in results) == 1
        assert sum(isinstance(r, VoiceExistsError) for r in results) == 4

    _run(url, body)


def test_count_cap(url: str) -> None:
    async def body(reg: VoiceRegistry) -> None:
        await reg.register("a", AUDIO, consent_id="c")
        await reg.register("b", AUDIO, consent_id="c")
        with pytest.raises(RegistryFullError, match="maximum of 2"):
            await reg.register("c", AUDIO, consent_id="c")
        await reg.register("b", AUDIO, consent_id="c2", replace=True)  # replacing does not grow the registry
        await reg.delete("a")
        await reg.register("c", AUDIO, consent_id="c")

    _run(url, body, max_voices=2)


@pytest.mark.parametrize("name", ["", "x" * 65, "-lead", ".lead", "has space", "a/b", "naïve", "a:b", None, 7])
def test_bad_names(url: str, name: object) -> None:
    async def body(reg: VoiceRegistry) -> None:
        with pytest.raises(RegistryError, match="voice name must be 1-64 characters"):
            await reg.register(name, AUDIO, consent_id="c")  # type: ignore[arg-type]

    _run(url, body)


def test_good_names_and_field_errors(url: str) -> None:
    async def body(reg: VoiceRegistry) -> None:
        for name in ("a", "A-b_c.1", "9" * 64):
            await reg.register(name, AUDIO, consent_id="c")
        with pytest.raises(RegistryError, match="consent_id is required"):
            await reg.register("n1", AUDIO, consent_id=" ")
        with pytest.raises(RegistryError, match="ref_text is 5000 characters"):
            await reg.register("n2", AUDIO, consent_id="c", ref_text="x" * 5000)
        with pytest.raises(RegistryError, match="description must be a string"):
            await reg.register("n3", AUDIO, consent_id="c", description=None)  # type: ignore[arg-type]
        assert await reg.count() == 3

    _run(url, body)


@pytest.mark.parametrize(
    ("audio", "reason"),
    [
        (b"", "empty"),
        (b"not audio at all" * 10, "cannot decode"),
        (_audio(0.5), "shorter than the minimum of 1 s"),
        (_audio(31.0, sr=8000), "longer than the maximum of 30 s"),
        (_audio(2.0, fill=float("nan"), subtype="FLOAT"), "NaN"),
        (_audio(2.0, fill=0.0), "silent"),
        ("a string", "must be bytes"),
        (b"\0" * (10 * 1024 * 1024 + 1), "more than the limit of 10485760"),
    ],
    ids=["empty", "corrupt", "too-short", "too-long", "nan", "silent", "wrong-type", "over-10MB"],
)
def test_bad_audio(url: str, audio: object, reason: str) -> None:
    async def body(reg: VoiceRegistry) -> None:
        with pytest.raises(AudioError, match=reason):
            await reg.register("v", audio, consent_id="c")  # type: ignore[arg-type]
        assert await reg.count() == 0

    _run(url, body)


def test_registration_survives_kill_9(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "data").start()
    try:

        async def register(reg: VoiceRegistry):
            assert await reg.check_durability() == []
            voice, _ = await reg.register("durable", AUDIO, consent_id="c-9", ref_text="text")
            return voice

        voice = _run(server.url, register)
        server.kill()  # right after the acknowledged write: no shutdown, no flush
        server.start()

        async def check(reg: VoiceRegistry) -> None:
            assert await reg.get("durable") == voice
            assert await reg.get_audio("durable") == AUDIO
            assert [v.name for v in await reg.list_voices()] == ["durable"]

        _run(server.url, check)
    finally:
        server.close()


def test_durability_check_and_outage(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "data", appendonly=False, appendfsync="everysec").start()
    try:

        async def body(reg: VoiceRegistry) -> None:
            problems = await reg.check_durability()
            assert any("appendonly is off" in p for p in problems)
            assert any("appendfsync is 'everysec'" in p for p in problems)
            await reg.client.config_set("maxmemory-policy", "allkeys-lru")
            assert any("can evict voices" in p for p in await reg.check_durability())
            server.stop()
            with pytest.raises(RegistryUnavailableError, match="voice registry unavailable"):
                await reg.register("v", AUDIO, consent_id="c")
            with pytest.raises(RegistryUnavailableError):
                await reg.list_voices()

        _run(server.url, body)
    finally:
        server.close()
