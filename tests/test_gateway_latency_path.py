"""The gateway's request path before the first audio, against the real talker, codec and reference encoder (tiny
Base checkpoint, in process on loopback):

- `GrpcBackend.synthesize` opens the codec's Decode while the talker's Generate is still waiting for its first
  chunk, and a refusal, a client disconnect or a deadline on either side cancels the other: no slot is left behind.
- A request naming a voice is resolved against a short-lived list of uploaded voices (`VoiceListCache`), not a
  ListVoices round trip each time; a voice uploaded through another gateway replica is usable at once.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf
from omni.services.codec.config import CodecConfig
from omni.services.codec.service import build_codec_service
from omni.services.codec.service import warm_up as codec_warm_up
from omni.services.common.metrics import MetricsServer
from omni.services.gateway.app import create_app
from omni.services.gateway.backend import InvalidRequest, Overloaded, SynthesisRequest, Unavailable, VoiceInfo
from omni.services.gateway.grpc_backend import INLINE_PROMPT_CHARS, GrpcBackend, VoiceListCache
from omni.services.refenc.config import RefencConfig
from omni.services.refenc.service import build_refenc_service
from omni.services.refenc.service import warm_up as refenc_warm_up
from omni.services.talker.config import TalkerConfig
from omni.services.talker.requests import prompt_to_proto
from omni.services.talker.service import build_talker_service
from omni.services.talker.service import warm_up as talker_warm_up

from omni.commands.serve import free_port
from omni.talker.prompt import SpeechRequest
from tests.redis_server import RedisServer

pytestmark = pytest.mark.timeout(180)
ROOT = Path(__file__).resolve().parent.parent

MAX_CONTEXT = 2100
HOLD_FRAMES = 2000  # a request that keeps its talker slot and codec stream for the whole test (ignore_eos)


def tone_wav(seconds: float = 1.5, rate: int = 16000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    buffer = io.BytesIO()
    sf.write(buffer, (0.3 * np.sin(2 * np.pi * 300 * t)).astype(np.float32), rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


@dataclass
class Stack:
    talker: str
    codec: str
    refenc: str | None
    talker_engine: object
    codec_engine: object

    def load(self) -> tuple[int, int, int]:
        """(talker slots in use, talker queue, codec streams open)."""
        talker = self.talker_engine
        return len(talker.slots), len(talker.waiting), len(self.codec_engine.streams)

    async def settle(self, expected: tuple[int, int, int]) -> tuple[int, int, int]:
        """The load once it equals `expected` (cancellations reach the engines a step later), else the last seen."""
        for _ in range(1000):
            if self.load() == expected:
                break
            await asyncio.sleep(0.01)
        return self.load()


@asynccontextmanager
async def running(model_dir: Path, talker: dict, codec: dict, redis_url: str | None = None) -> AsyncIterator[Stack]:
    """Talker and codec (with the given settings) and, when `redis_url` is given, a reference encoder ('' = no
    Redis), all in this event loop."""
    common = {"model": str(model_dir), "host": "127.0.0.1", "port": 0, "grace_s": 0.5}
    talker_service, parts = build_talker_service(TalkerConfig(**common, max_context=MAX_CONTEXT, **talker))
    codec_service, codec_engine = build_codec_service(CodecConfig(**common, **codec))
    services = [talker_service, codec_service]
    refenc = None
    if redis_url is not None:
        refenc_service, refenc_parts = build_refenc_service(
            RefencConfig(**common, redis_url=redis_url), MetricsServer("omni_refenc")
        )
        services.append(refenc_service)
    for service in services:
        await service.start()
    parts.engine.start()
    codec_engine.start()
    await talker_warm_up(parts.engine)
    await codec_warm_up(codec_engine)
    if redis_url is not None:
        refenc_parts.batcher.start()
        await refenc_warm_up(refenc_parts)
        refenc = f"127.0.0.1:{refenc_service.port}"
    try:
        yield Stack(
            f"127.0.0.1:{talker_service.port}", f"127.0.0.1:{codec_service.port}", refenc, parts.engine, codec_engine
        )
    finally:
        for service in services:
            await service.stop(0.5)
        await parts.engine.stop()
        await codec_engine.stop()
        if redis_url is not None:
            await refenc_parts.batcher.stop()
            await refenc_parts.cache.close()
            if refenc_parts.registry is not None:
                await refenc_parts.registry.client.aclose()


@asynccontextmanager
async def backend(model_dir: Path, talkers: list[str], codecs: list[str], refencs: list[str], **kw):
    gateway = GrpcBackend(model_dir, talkers, codecs, refencs, down_s=60, **kw)
    await gateway.start()
    try:
        yield gateway
    finally:
        await gateway.close()


def requests_for(model_dir: Path) -> Callable[..., SynthesisRequest]:
    hidden = json.loads((model_dir / "config.json").read_text())["talker_config"]["hidden_size"]

    def request(max_new_tokens: int, **fields) -> SynthesisRequest:
        return SynthesisRequest(
            model=model_dir.name, text="The request path.", task_type="Base", speaker_embedding=[0.1] * hidden,
            x_vector_only_mode=True, max_new_tokens=max_new_tokens, seed=1, **fields,
        )  # fmt: skip

    return request


async def first_audio(stream: AsyncIterator) -> np.ndarray:
    chunk = await anext(stream)
    assert isinstance(chunk, np.ndarray) and chunk.size > 0
    return chunk


def test_the_codec_opens_while_the_talker_queues_and_every_way_out_frees_both(tiny_model_dir) -> None:
    """One talker slot and one queue place: a held request fills the slot, so the next one waits in the talker's
    queue, where its codec stream must already be open. Disconnect, deadline, talker full, talker refusal and no
    talker each end such a request with its error and free its codec stream and talker place."""
    model_dir = tiny_model_dir("base")
    request = requests_for(model_dir)

    async def scenario() -> None:
        async with (
            running(model_dir, talker={"max_streams": 1, "max_queue": 1}, codec={"max_streams": 4}) as stack,
            backend(model_dir, [stack.talker], [stack.codec], []) as gateway,
        ):
            held = gateway.synthesize(request(HOLD_FRAMES, ignore_eos=True))
            await first_audio(held)
            idle = (1, 0, 1)  # the held request's talker slot and codec stream
            assert stack.load() == idle

            # Queued at the talker (no message from it yet), the codec stream is open already.
            queued = gateway.synthesize(request(4))
            reading = asyncio.ensure_future(anext(queued))
            assert await stack.settle((1, 1, 2)) == (1, 1, 2)
            assert not reading.done()

            # The talker's queue is full: Overloaded (the talker's retry-after), the codec stream is cancelled.
            with pytest.raises(Overloaded) as full:
                await anext(gateway.synthesize(request(4)))
            assert full.value.retry_after > 0
            assert await stack.settle((1, 1, 2)) == (1, 1, 2)

            # The client goes away (the HTTP layer cancels the read, then closes the iterator).
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            await queued.aclose()
            assert await stack.settle(idle) == idle

            # The deadline passes while the request waits in the talker's queue with its codec stream open.
            scope: asyncio.Timeout | None = None

            async def read_until_deadline(stream: AsyncIterator) -> None:
                nonlocal scope
                async with asyncio.timeout(None) as scope:
                    await anext(stream)

            late = gateway.synthesize(request(4))
            waiting = asyncio.ensure_future(read_until_deadline(late))
            assert await stack.settle((1, 1, 2)) == (1, 1, 2)
            scope.reschedule(asyncio.get_running_loop().time())
            with pytest.raises(TimeoutError):
                await waiting
            await late.aclose()
            assert await stack.settle(idle) == idle

            # The talker refuses the request itself (prompt + max_new_tokens beyond its context).
            with pytest.raises(InvalidRequest, match="talker refused the request: .*context limit"):
                await anext(gateway.synthesize(request(MAX_CONTEXT - 1)))
            assert await stack.settle(idle) == idle

            # No talker is reachable (a dead address only).
            dead = [f"127.0.0.1:{free_port()}"]
            async with backend(model_dir, dead, [stack.codec], [], replica_wait_s=0.5) as no_talker:
                with pytest.raises(Unavailable, match="no talker replica"):
                    await anext(no_talker.synthesize(request(4)))
            assert await stack.settle(idle) == idle

            # Still serving: a request after all that streams to the end.
            await held.aclose()
            assert await stack.settle((0, 0, 0)) == (0, 0, 0)
            items = [item async for item in gateway.synthesize(request(4))]
            assert sum(chunk.size for chunk in items[:-1]) > 0 and items[-1].output_tokens == 3
        assert stack.load() == (0, 0, 0)

    asyncio.run(scenario())


def test_a_codec_refusal_frees_the_talker_slot(tiny_model_dir) -> None:
    """One codec stream, no reference codes allowed: the codec is full, refuses in-context reference codes, or is
    unreachable, while the talker has admitted the request; each ends with its error and the talker slot free."""
    model_dir = tiny_model_dir("base")
    request = requests_for(model_dir)
    clone = SynthesisRequest(
        model=model_dir.name, text="Cloned.", task_type="Base", ref_audio=tone_wav(), ref_text="A tone.",
        max_new_tokens=4, seed=1,
    )  # fmt: skip

    async def scenario() -> None:
        talker = {"max_streams": 2, "max_queue": 0}
        async with (
            running(model_dir, talker=talker, codec={"max_streams": 1, "max_ref_frames": 0}, redis_url="") as stack,
            backend(model_dir, [stack.talker], [stack.codec], [stack.refenc]) as gateway,
        ):
            held = gateway.synthesize(request(HOLD_FRAMES, ignore_eos=True))
            await first_audio(held)
            idle = (1, 0, 1)
            assert stack.load() == idle

            with pytest.raises(InvalidRequest, match="codec refused the request: ref_code_frames"):
                await anext(gateway.synthesize(clone))
            assert await stack.settle(idle) == idle

            with pytest.raises(Overloaded, match="all codec replicas are at capacity"):
                await anext(gateway.synthesize(request(4)))
            assert await stack.settle(idle) == idle

            dead = [f"127.0.0.1:{free_port()}"]
            async with backend(model_dir, [stack.talker], dead, [], replica_wait_s=0.5) as no_codec:
                with pytest.raises(Unavailable, match="no codec replica"):
                    await anext(no_codec.synthesize(request(4)))
            assert await stack.settle(idle) == idle

            await held.aclose()
            assert await stack.settle((0, 0, 0)) == (0, 0, 0)

    asyncio.run(scenario())


def test_a_request_waits_for_a_codec_this_gateway_has_not_yet_seen_come_up(tiny_model_dir) -> None:
    """Each gateway process polls the replicas on its own, so right after a start one can still count a codec as down
    that is up (on the GPU a request was refused 0.2 s before its worker saw the codec: docs/benchmarks.md run 40).
    Here the gateway polls once, while nothing listens on the codec's port; then the codec starts. A request waits
    for the next poll round (run by hand: the background poll is an hour apart) and streams; it is not refused."""
    model_dir = tiny_model_dir("base")
    request = requests_for(model_dir)
    codec_port = free_port()

    async def scenario() -> list:
        async with (
            running(model_dir, talker={"max_streams": 2}, codec={}) as stack,
            backend(model_dir, [stack.talker], [f"127.0.0.1:{codec_port}"], [], poll_s=3600, replica_wait_s=60) as gw,
        ):
            assert not await gw.ready() and gw.codecs.ranked() == []
            common = {"model": str(model_dir), "host": "127.0.0.1", "port": codec_port, "grace_s": 0.5}
            codec, engine = build_codec_service(CodecConfig(**common, max_streams=2))
            await codec.start()
            engine.start()
            await codec_warm_up(engine)
            try:
                reading = asyncio.ensure_future(collect(gw.synthesize(request(4))))
                await asyncio.sleep(0.5)
                assert not reading.done()  # waiting for a poll, not refused
                for _ in range(50):  # the poller's rounds; the channel may still be backing off from its refusal
                    await gw._refresh()
                    if gw.codecs.ranked():
                        break
                    await asyncio.sleep(0.2)
                return await asyncio.wait_for(reading, 60)
            finally:
                await codec.stop(0.5)
                await engine.stop()

    async def collect(stream: AsyncIterator) -> list:
        return [item async for item in stream]

    items = asyncio.run(scenario())
    assert sum(chunk.size for chunk in items[:-1]) > 0 and items[-1].output_tokens == 3


def test_a_voice_uploaded_through_one_gateway_is_usable_through_another_at_once(tiny_model_dir, caplog) -> None:
    """Two gateway replicas (GrpcBackends) over one reference encoder and Redis. Replica B keeps its voice list for
    an hour here, so every ListVoices it makes is one the cache could not avoid."""
    model_dir = tiny_model_dir("base")
    caplog.set_level(logging.INFO, logger="omni.refenc")

    def list_calls() -> int:
        return sum(record.getMessage() == "refenc.list_voices" for record in caplog.records)

    async def scenario() -> None:
        with RedisServer() as redis:
            async with (
                running(model_dir, talker={"max_streams": 2}, codec={"max_streams": 4}, redis_url=redis.url) as stack,
                backend(model_dir, [stack.talker], [stack.codec], [stack.refenc]) as replica_a,
                backend(model_dir, [stack.talker], [stack.codec], [stack.refenc], voices_max_age_s=3600) as replica_b,
                httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(replica_a)), base_url="http://a") as a,
                httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(replica_b)), base_url="http://b") as b,
            ):
                speech = {"input": "Mine.", "voice": "newvoice", "response_format": "pcm", "max_new_tokens": 3}

                unknown = await b.post("/v1/audio/speech", json=speech)
                assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "voice"

                files = {"audio_sample": ("v.wav", tone_wav(), "audio/wav")}
                form = {"name": "newvoice", "consent": "c-1", "ref_text": "A tone."}
                assert (await a.post("/v1/audio/voices", files=files, data=form)).status_code == 200

                calls = list_calls()
                for _ in range(3):  # the first finds the new name by re-reading the list; the others need no read
                    used = await b.post("/v1/audio/speech", json=speech)
                    assert used.status_code == 200 and len(used.content) > 0, used.text
                assert list_calls() == calls + 1

                # Deleted through A: A's next request re-reads (400 unknown voice). B's list is an hour old at most
                # here, so B still resolves the name, and the encoder, which reads Redis, answers 404.
                assert (await a.delete("/v1/audio/voices/newvoice")).status_code == 200
                assert (await a.post("/v1/audio/speech", json=speech)).status_code == 400
                stale = await b.post("/v1/audio/speech", json=speech)
                assert stale.status_code == 404 and "newvoice" in stale.json()["error"]["message"]
                assert await stack.settle((0, 0, 0)) == (0, 0, 0)

    asyncio.run(scenario())


def test_voice_list_cache_reads_only_when_the_list_cannot_answer() -> None:
    reads: list[int] = []
    voices = [VoiceInfo("mine", "c", 0, 0, "audio/wav")]
    gate = asyncio.Event()

    async def fetch() -> list[VoiceInfo]:
        reads.append(1)
        await gate.wait()
        return voices

    async def scenario() -> None:
        gate.set()
        cache = VoiceListCache(fetch, max_age_s=3600)
        builtins = ("vivian",)
        assert await cache.lookup("vivian", builtins) == voices and len(reads) == 1  # nothing kept yet
        assert await cache.lookup("vivian", builtins) == voices and len(reads) == 1  # a built-in: answered
        assert await cache.lookup("mine", builtins) == voices and len(reads) == 1  # a known upload: answered
        await cache.lookup("nobody", builtins)  # neither: maybe just uploaded elsewhere, so read
        await cache.lookup("nobody", builtins)
        assert len(reads) == 3

        cache.clear()  # this gateway changed the registry
        await cache.lookup("vivian", builtins)
        assert len(reads) == 4

        # A read that started before a clear is returned to its caller but not kept.
        gate.clear()
        before = asyncio.ensure_future(cache.lookup("nobody", builtins))
        await asyncio.sleep(0)
        cache.clear()
        gate.set()
        assert await before == voices and len(reads) == 5
        await cache.lookup("vivian", builtins)
        assert len(reads) == 6

        expired = VoiceListCache(fetch, max_age_s=0.0)
        await expired.lookup("vivian", builtins)
        await expired.lookup("vivian", builtins)
        assert len(reads) == 8

    asyncio.run(scenario())


def test_requests_that_find_the_voice_list_stale_share_one_read() -> None:
    reads: list[int] = []
    gate = asyncio.Event()

    async def fetch() -> list[VoiceInfo]:
        reads.append(1)
        await gate.wait()
        return [VoiceInfo("mine", "c", 0, 0, "audio/wav")]

    async def settle() -> None:  # let every task started so far run up to its wait
        for _ in range(10):
            await asyncio.sleep(0)

    async def scenario() -> None:
        cache = VoiceListCache(fetch, max_age_s=0.0)  # always stale: every lookup needs a read
        builtins = ("vivian",)
        burst = [asyncio.ensure_future(cache.lookup(name, builtins)) for name in ["vivian"] * 20]
        gone = asyncio.ensure_future(cache.lookup("vivian", builtins))
        unknown = asyncio.ensure_future(cache.lookup("nobody", builtins))  # maybe just uploaded: a read of its own
        await settle()
        assert len(reads) == 2
        gone.cancel()  # a client that goes away does not cancel the read the others wait for
        await settle()
        gate.set()
        lists = await asyncio.gather(*burst, unknown)
        assert all(voices[0].name == "mine" for voices in lists) and len(reads) == 2 and gone.cancelled()

        # A read in flight when this gateway changes the registry is not shared with later requests.
        gate.clear()
        first = asyncio.ensure_future(cache.lookup("mine", builtins))
        await settle()
        cache.clear()
        second = asyncio.ensure_future(cache.lookup("mine", builtins))
        await settle()
        assert len(reads) == 4
        gate.set()
        await asyncio.gather(first, second)

    asyncio.run(scenario())


def test_short_prompts_build_on_the_event_loop_and_long_ones_in_a_thread(tiny_model_dir) -> None:
    """A sentence's prompt is built on the gateway's event loop (a thread hand-off costs as much as the build, and in a
    burst every threaded build waited for the whole burst); a text past INLINE_PROMPT_CHARS still builds in a worker
    thread, so it cannot hold the loop. Either way the talker gets the builder's prompt."""
    backend = GrpcBackend(tiny_model_dir("custom_voice"), ["127.0.0.1:1"], ["127.0.0.1:1"], ["127.0.0.1:1"])
    build, threads = backend.builder.build, []

    def build_and_record(speech):
        threads.append(threading.current_thread())
        return build(speech)

    backend.builder.build = build_and_record
    speaker = sorted(backend.builder.speakers)[0]
    texts = ["A short sentence.", "word " * (INLINE_PROMPT_CHARS // 5 + 1)]
    requests = [SynthesisRequest(model="tiny", text=t, task_type="CustomVoice", voice=speaker) for t in texts]

    async def scenario():
        return threading.current_thread(), [await backend._prepare(r) for r in requests]

    loop_thread, prepared = asyncio.run(scenario())
    assert threads[0] is loop_thread and threads[1] is not loop_thread
    for request, p in zip(requests, prepared, strict=True):
        speech = SpeechRequest(text=request.text, task_type="CustomVoice", language="Auto", speaker=speaker)
        assert p.generate.prompt == prompt_to_proto(build(speech))


def test_bench_prepare_times_the_prepare_path_alone_and_in_a_burst(tiny_model_dir) -> None:
    command = [sys.executable, str(ROOT / "tools" / "bench_prepare.py"), "--burst", "4", "--rounds", "1"]
    result = subprocess.run([*command, "--model", str(tiny_model_dir("custom_voice"))], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    one_median, one_p90, burst, burst_median, burst_last = (
        result.stdout.strip().splitlines()[-1].strip("| ").split(" | ")
    )
    assert 0 < float(one_median) <= float(one_p90) and burst == "4" and 0 < float(burst_median) <= float(burst_last)
    refused = subprocess.run([*command[:2], "--burst", "0"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--burst" in refused.stderr
