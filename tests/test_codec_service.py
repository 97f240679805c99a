"""The codec service over real gRPC on loopback with a tiny checkpoint in the official layout.

Every stream's PCM must equal the whole-utterance decode of its codes (reference codes as left context), with
many streams interleaved, slots reused after cancellation, refusals when full, and bad chunks rejected while
other streams go on.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest
import torch
from omni.services.codec.config import CodecConfig
from omni.services.codec.engine import END_OF_STREAM, CodecEngine, DecodeFailed
from omni.services.codec.metrics import CodecMetrics
from omni.services.codec.service import build_codec_service, warm_up
from omni.services.common.identity import model_identity
from omni.services.common.packing import decode_pcm, pack_codes

from omni.commands.serve import free_port
from omni.proto import codec_pb2, codec_pb2_grpc, common_pb2
from tests.grpc_health import wait_serving

ROOT = Path(__file__).resolve().parent.parent
S16, F32 = common_pb2.SAMPLE_FORMAT_PCM_S16LE, common_pb2.SAMPLE_FORMAT_PCM_F32LE
SPF = 1920


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """The part of a tiny checkpoint the codec reads: config.json and speech_tokenizer/ (official layout)."""
    from omni.models.qwen3_tts.codec_checkpoint import write_tiny_speech_tokenizer
    from omni.models.qwen3_tts.tiny import tiny_config

    out = tmp_path_factory.mktemp("codec") / "Qwen3-TTS-tiny"
    out.mkdir()
    (out / "config.json").write_text(json.dumps(tiny_config("custom_voice")))
    # Narrow convs keep the CPU cost down; a 4-frame attention window makes short streams cross it.
    sizes = {"decoder_decoder_dim": 16, "decoder_latent_dim": 16, "decoder_sliding_window": 4}
    write_tiny_speech_tokenizer(out / "speech_tokenizer", seed=1, **sizes)
    return out


@pytest.fixture(scope="module")
def decoder(model_dir):
    from omni.models.qwen3_tts.codec import load_codec_decoder

    return load_codec_decoder(model_dir)


def expected_audio(decoder, streams: list[tuple[np.ndarray, np.ndarray | None]]) -> list[np.ndarray]:
    """Whole-utterance decodes, batched by total length; the reference part of the audio is cut off."""
    out: list[np.ndarray | None] = [None] * len(streams)
    groups: dict[int, list[int]] = {}
    for i, (codes, ref) in enumerate(streams):
        full = codes if ref is None else np.concatenate([ref, codes])
        groups.setdefault(len(full), []).append(i)
    for indices in groups.values():
        full = [s[0] if s[1] is None else np.concatenate([s[1], s[0]]) for s in (streams[i] for i in indices)]
        waves = decoder.decode(torch.from_numpy(np.stack(full))).numpy()
        for i, wave in zip(indices, waves, strict=True):
            ref = streams[i][1]
            out[i] = wave[(0 if ref is None else len(ref)) * SPF :]
    return out


def plan_sizes(total: int, plan: list[int]) -> list[int]:
    """Chunk sizes: the plan's sizes in order, its last size repeated, the remainder flushed."""
    sizes, i = [], 0
    while sum(sizes) < total:
        sizes.append(min(plan[min(i, len(plan) - 1)], total - sum(sizes)))
        i += 1
    return sizes


def assert_rows_of_chunks(rows: list[int], sizes: list[int], merge_frames: int = 15) -> None:
    """Each audio message is one chunk, or consecutive chunks that fit `merge_frames` together (the codec decodes a
    stream's queued chunks as one row and returns the row as one message)."""
    k = 0
    for row in rows:
        taken = [sizes[k]]
        while sum(taken) < row and k + len(taken) < len(sizes):
            taken.append(sizes[k + len(taken)])
        assert sum(taken) == row and (len(taken) == 1 or row <= merge_frames), (rows, sizes)
        k += len(taken)
    assert k == len(sizes), (rows, sizes)


def open_message(identity, ref=None, fmt=S16, request_id="t") -> codec_pb2.DecodeRequest:
    opening = codec_pb2.DecodeOpen(request_id=request_id, model=identity, sample_format=fmt)
    if ref is not None:
        opening.ref_codes, opening.ref_code_frames = pack_codes(ref), len(ref)
    return codec_pb2.DecodeRequest(open=opening)


def chunk_message(codes: np.ndarray, start: int, last: bool, num_codebooks: int = 16) -> codec_pb2.DecodeRequest:
    data = codes.astype("<i2").tobytes()
    return codec_pb2.DecodeRequest(
        chunk=common_pb2.CodecChunk(
            codes=data,
            num_frames=len(codes),
            num_codebooks=num_codebooks,
            first_frame_index=start,
            first=start == 0,
            last=last,
        )
    )


async def decode_stream(stub, identity, codes, plan, ref=None, fmt=S16, mark_last=True) -> np.ndarray:
    """One client stream: open, chunks per plan (yielding to other tasks between them), all audio back."""

    async def requests():
        yield open_message(identity, ref, fmt)
        start = 0
        sizes = plan_sizes(len(codes), plan)
        for k, n in enumerate(sizes):
            await asyncio.sleep(0)
            yield chunk_message(codes[start : start + n], start, mark_last and k == len(sizes) - 1)
            start += n

    messages = [m async for m in stub.Decode(requests())]
    kinds = [m.WhichOneof("kind") for m in messages]
    assert kinds[0] == "started" and kinds[-1] == "summary" and set(kinds[1:-1]) == {"audio"}
    audio = [m.audio for m in messages[1:-1]]
    assert_rows_of_chunks([a.num_frames for a in audio], plan_sizes(len(codes), plan))
    assert [a.first_frame_index for a in audio] == list(np.cumsum([0] + [a.num_frames for a in audio[:-1]]))
    assert audio[-1].last == mark_last and not any(a.last for a in audio[:-1])
    summary = messages[-1].summary
    assert summary.num_frames == len(codes) and summary.num_samples == len(codes) * SPF
    assert summary.num_chunks == len(audio)
    pcm = np.concatenate([decode_pcm(a.pcm, fmt) for a in audio])
    assert len(pcm) == len(codes) * SPF
    return pcm


def assert_same_audio(got: np.ndarray, want: np.ndarray, fmt: int) -> None:
    if fmt == S16:  # one int16 step of rounding slack
        want = np.round(np.clip(want, -1, 1) * 32767) / 32767
        np.testing.assert_allclose(got, want, atol=1.5 / 32767, rtol=0)
    else:
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


class Running:
    """An in-process codec service on a loopback port, with a channel and stub to it."""

    def __init__(self, model_dir: Path, **settings) -> None:
        self.config = CodecConfig(model=str(model_dir), host="127.0.0.1", port=0, grace_s=1.0, **settings)

    async def __aenter__(self):
        self.metrics = CodecMetrics()
        self.service, self.engine = build_codec_service(self.config, self.metrics)
        await self.service.start()
        self.engine.start()
        await warm_up(self.engine)
        await self.service.set_serving()
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.service.port}")
        self.stub = codec_pb2_grpc.CodecServiceStub(self.channel)
        self.identity = (await self.stub.GetModelInfo(codec_pb2.GetModelInfoRequest())).model
        return self

    async def __aexit__(self, *exc):
        await self.channel.close()
        await self.service.stop(0.5)
        await self.engine.stop()

    async def active_streams(self) -> int:
        return (await self.stub.GetLoad(codec_pb2.GetLoadRequest())).load.active_streams

    async def wait_idle(self) -> None:
        """Slots are released by the handlers as their calls end; wait for that (bounded)."""
        for _ in range(500):
            if await self.active_streams() == 0:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"{await self.active_streams()} streams still hold slots")


def random_codes(rng, frames: int) -> np.ndarray:
    return rng.integers(0, 2048, size=(frames, 16))


PLANS = [[1], [1, 4, 15], [2], [1, 3], [3, 1, 2], [15], [1, 2, 5]]


@pytest.mark.parametrize("max_tick_rows, async_scheduling", [(0, False), (4, False), (4, True)])
def test_interleaved_streams_equal_whole_utterance_decode(model_dir, decoder, max_tick_rows, async_scheduling):
    """34 streams over gRPC at once; with `max_tick_rows` 4 most ticks leave rows for later (least lead first); with
    async scheduling each tick is queued before the previous one is read back."""
    rng = np.random.default_rng(0)
    streams = []
    for i in range(34):
        ref = random_codes(rng, int(rng.integers(1, 4))) if i % 5 == 0 else None
        streams.append((random_codes(rng, int(rng.integers(2, 7))), ref, PLANS[i % len(PLANS)], (S16, F32)[i % 2]))
    want = expected_audio(decoder, [(codes, ref) for codes, ref, _, _ in streams])

    async def scenario():
        # Coalescing on (it excludes async scheduling): exercises the batching wait; results must not depend on it.
        settings = dict(max_streams=40, max_tick_rows=max_tick_rows, async_scheduling=async_scheduling)
        if not async_scheduling:
            settings.update(min_batch=8, max_wait_ms=20)
        async with Running(model_dir, **settings) as svc:
            got = await asyncio.gather(
                *(decode_stream(svc.stub, svc.identity, c, plan, ref, fmt) for c, ref, plan, fmt in streams)
            )
            await svc.wait_idle()
            return got, svc.metrics

    got, metrics = asyncio.run(scenario())
    for (_, _, _, fmt), g, w in zip(streams, got, want, strict=True):
        assert_same_audio(g, w, fmt)
    frames = metrics.server.registry.get_sample_value("omni_codec_frames_decoded_total")
    assert frames == sum(len(c) for c, _, _, _ in streams) + 1  # + the warm-up frame
    deferred = metrics.server.registry.get_sample_value("omni_codec_deferred_rows_total")
    assert (deferred > 0) if max_tick_rows else (deferred == 0)
    ticks, rows = (metrics.server.registry.get_sample_value(f"omni_codec_batch_size_{k}") for k in ("count", "sum"))
    assert max_tick_rows == 0 or rows <= ticks * max_tick_rows
    assert ticks < sum(len(plan_sizes(len(c), p)) for c, _, p, _ in streams)  # chunks shared steps


def test_half_close_without_last_ends_the_stream(model_dir, decoder):
    codes = random_codes(np.random.default_rng(1), 5)
    (want,) = expected_audio(decoder, [(codes, None)])

    async def scenario():
        # A backlog limit of one chunk: the reader pauses until the engine catches up.
        async with Running(model_dir, max_streams=2, max_chunk_frames=2, max_backlog_frames=2) as svc:
            return await decode_stream(svc.stub, svc.identity, codes, [2], fmt=F32, mark_last=False)

    assert_same_audio(asyncio.run(scenario()), want, F32)


def test_coalescing_holds_steady_chunks_but_never_first_chunks(decoder):
    rng = np.random.default_rng(5)
    a, b = random_codes(rng, 3), random_codes(rng, 2)
    want_a, want_b = expected_audio(decoder, [(a, None), (b, None)])

    async def scenario():
        # A 10-minute window: a held chunk would time the test out; only batch-filling may release it early.
        engine = CodecEngine(decoder, max_streams=4, min_batch=2, max_wait_ms=600_000)
        engine.start()
        try:
            first = engine.open(F32)
            engine.submit(first, a[:1], False)
            got_a = [await first.outputs.get()]  # a first chunk alone is decoded at once
            engine.submit(first, a[1:], True)
            await asyncio.sleep(0.05)
            assert first.outputs.empty()  # a steady chunk alone waits for a second stream
            registry = engine.metrics.server.registry

            def decode_steps():
                return [registry.get_sample_value(f"omni_codec_batch_size_{k}") for k in ("count", "sum")]

            steps_before = decode_steps()
            second = engine.open(F32)
            engine.submit(second, b, True)
            got_a.append(await first.outputs.get())
            got_b = await second.outputs.get()
            # Both went in one step: one more step, with two streams in it.
            steps_after = decode_steps()
            assert (steps_after[0] - steps_before[0], steps_after[1] - steps_before[1]) == (1, 2)
            return np.concatenate([decode_pcm(c.pcm, F32) for c in got_a]), decode_pcm(got_b.pcm, F32)
        finally:
            await engine.stop()

    got_a, got_b = asyncio.run(scenario())
    assert_same_audio(got_a, want_a, F32)
    assert_same_audio(got_b, want_b, F32)


class RecordingEngine(CodecEngine):
    """Records each step's rows as (slot, frames), and the order in which streams got their audio."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.steps, self.delivered = [], []

    def _launch(self, fresh, work):
        frames = [sum(len(p.codes) for p in chunks if p.codes is not None) for _, chunks in work]
        self.steps.append([(s.slot, n) for (s, _), n in zip(work, frames, strict=True)])
        return super()._launch(fresh, work)

    def _deliver(self, stream, chunks, pcm, step_start, tick_ms):
        self.delivered.append(stream.slot)
        super()._deliver(stream, chunks, pcm, step_start, tick_ms)


class SlowStepEngine(RecordingEngine):
    """A RecordingEngine whose steps with a row of one of `slow_slots` take `slow_s` longer (a long tick under load)."""

    def __init__(self, *args, slow_slots=(), slow_s=0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.slow_slots, self.slow_s = set(slow_slots), slow_s

    def _launch(self, fresh, work):
        if any(s.slot in self.slow_slots for s, _ in work):
            time.sleep(self.slow_s)  # in the engine's worker thread, as a long decode would be
        return super()._launch(fresh, work)


class OrderEngine(CodecEngine):
    """Logs ("launch", n) and ("collect", n) in the order the engine thread does them (n: the step's launch number)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log: list[tuple[str, int]] = []
        self.launched: list = []

    def _launch(self, fresh, work):
        tick = super()._launch(fresh, work)
        self.launched.append(tick)
        self.log.append(("launch", len(self.launched)))
        return tick

    def _collect(self, tick):
        self.log.append(("collect", next(n for n, t in enumerate(self.launched, 1) if t is tick)))
        return super()._collect(tick)


@pytest.mark.parametrize("fmt", [S16, F32])
def test_async_scheduling_queues_the_next_tick_before_reading_one_back(decoder, fmt):
    """Four chunks queued before the first tick, one row a tick (merge_frames 1): synchronous ticks are launched and
    read back one by one; asynchronous ones each read back after the next was queued, the last after nothing more
    was. Either way the audio comes back in order, one piece a chunk, equal to the whole utterance's decode."""
    rng = np.random.default_rng(12)
    sizes = [1, 2, 3, 4]
    codes = random_codes(rng, sum(sizes))
    (want,) = expected_audio(decoder, [(codes, None)])

    async def scenario(async_scheduling: bool):
        engine = OrderEngine(decoder, max_streams=2, merge_frames=1, async_scheduling=async_scheduling)
        engine.start()
        try:
            stream = engine.open(fmt)
            starts = np.cumsum([0, *sizes])
            for start, end in zip(starts[:-1], starts[1:], strict=True):
                engine.submit(stream, codes[start:end], end == starts[-1])
            pieces = [await stream.outputs.get() for _ in sizes]
            return engine.log, pieces
        finally:
            await engine.stop()

    for async_scheduling in (False, True):
        log, pieces = asyncio.run(scenario(async_scheduling))
        if async_scheduling:
            assert log == [("launch", 1), ("launch", 2), ("collect", 1), ("launch", 3), ("collect", 2),
                           ("launch", 4), ("collect", 3), ("collect", 4)]  # fmt: skip
        else:
            assert log == [(what, n) for n in range(1, 5) for what in ("launch", "collect")]
        assert [p.num_frames for p in pieces] == sizes and [p.last for p in pieces] == [False] * 3 + [True]
        assert [p.first_frame_index for p in pieces] == list(np.cumsum([0, *sizes[:-1]]))
        assert_same_audio(np.concatenate([decode_pcm(p.pcm, fmt) for p in pieces]), want, fmt)


class FailingEngine(RecordingEngine):
    """A RecordingEngine whose steps with a row of one of `fail_slots` raise when launched."""

    def __init__(self, *args, fail_slots=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fail_slots = set(fail_slots)

    def _launch(self, fresh, work):
        if any(s.slot in self.fail_slots for s, _ in work):
            raise RuntimeError("device fault")
        return super()._launch(fresh, work)


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_a_step_that_fails_to_launch_ends_its_streams_only(decoder, async_scheduling):
    """One row a tick (max_tick_rows 1): `good`'s first row, then `bad`'s, whose launch fails. Only `bad` ends (with
    DecodeFailed); `good`'s first row, in flight when the failure came under async scheduling, is still read back and
    delivered, its next row decodes, and its audio equals the whole decode."""
    rng = np.random.default_rng(13)
    a, b = random_codes(rng, 4), random_codes(rng, 2)
    (want,) = expected_audio(decoder, [(a, None)])

    async def scenario():
        engine = FailingEngine(decoder, max_streams=4, max_tick_rows=1, async_scheduling=async_scheduling)
        engine.start()
        try:
            good, bad = engine.open(F32), engine.open(F32)
            engine.fail_slots = {bad.slot}
            engine.submit(good, a[:1], False)
            engine.submit(bad, b, True)
            first, failure = await good.outputs.get(), await bad.outputs.get()
            engine.submit(good, a[1:], True)
            second = await good.outputs.get()
            return first, failure, second, engine.steps
        finally:
            await engine.stop()

    first, failure, second, steps = asyncio.run(scenario())
    assert isinstance(failure, DecodeFailed) and "device fault" in str(failure)
    assert [first.num_frames, second.num_frames] == [1, 3] and second.last
    assert_same_audio(np.concatenate([decode_pcm(c.pcm, F32) for c in (first, second)]), want, F32)
    assert steps == [[(0, 1)], [(0, 3)]]  # the failed launch recorded nothing


def test_coalescing_window_starts_when_a_tick_could_start_not_at_the_chunks_arrival(decoder):
    # A steady chunk that arrives during a long tick (1 s) has waited longer than the window (0.6 s) by the tick's
    # end. The window counts from then, so the chunk still waits for a second stream and shares its step; counted
    # from the chunk's arrival it would have gone alone at once (and under load no tick would ever wait).
    rng = np.random.default_rng(9)
    a, b, c = random_codes(rng, 3), random_codes(rng, 2), random_codes(rng, 2)

    async def scenario():
        engine = SlowStepEngine(decoder, max_streams=4, min_batch=2, max_wait_ms=600, slow_slots={2}, slow_s=1.0)
        engine.start()
        try:
            first = engine.open(F32)  # slot 0
            engine.submit(first, a[:1], False)
            await first.outputs.get()  # a first chunk goes at once
            engine.open(F32)  # slot 1, idle: keeps the slots in order
            slow = engine.open(F32)  # slot 2: its steps are long
            engine.submit(slow, c, True)
            await asyncio.sleep(0.2)  # the slow tick is running
            engine.submit(first, a[1:], True)  # arrives during it
            await slow.outputs.get()  # the slow tick is over; `first`'s chunk is ~0.8 s old
            second = engine.open(F32)  # slot 3
            engine.submit(second, b, True)
            await first.outputs.get()
            await second.outputs.get()
            return engine.steps
        finally:
            await engine.stop()

    steps = asyncio.run(scenario())
    step_of_a = next(step for step in steps if (0, 2) in step)  # `first`'s second row: 2 frames
    assert (3, 2) in step_of_a, steps  # with the second stream's row


@pytest.mark.parametrize("apart", [True, False])
def test_first_chunks_apart_decodes_new_streams_first_rows_in_a_step_of_their_own(decoder, apart):
    rng = np.random.default_rng(8)
    a, b = random_codes(rng, 16), random_codes(rng, 3)
    want_a, want_b = expected_audio(decoder, [(a, None), (b, None)])

    async def scenario():
        engine = RecordingEngine(decoder, max_streams=4, first_chunks_apart=apart)
        engine.start()
        try:
            old = engine.open(F32)
            engine.submit(old, a[:1], False)
            got_a = [await old.outputs.get()]
            engine.steps.clear()
            engine.delivered.clear()
            # Before the engine's next tick: the old stream's next 15 frames and a new stream's first frame.
            engine.submit(old, a[1:], True)
            new = engine.open(F32)
            engine.submit(new, b[:1], False)
            got_a.append(await old.outputs.get())
            got_b = [await new.outputs.get()]
            steps, delivered = list(engine.steps), list(engine.delivered)
            engine.submit(new, b[1:], True)
            got_b.append(await new.outputs.get())
            pcm = [np.concatenate([decode_pcm(c.pcm, F32) for c in got]) for got in (got_a, got_b)]
            return steps, delivered, (old.slot, new.slot), pcm
        finally:
            await engine.stop()

    steps, delivered, (old, new), (got_a, got_b) = asyncio.run(scenario())
    if apart:  # the new stream's frame is decoded and sent first, in a step without the old stream's 15 frames
        assert steps == [[(new, 1)], [(old, 15)]] and delivered == [new, old]
    else:
        assert steps == [[(old, 15), (new, 1)]] and delivered == [old, new]
    assert_same_audio(got_a, want_a, F32)
    assert_same_audio(got_b, want_b, F32)


def test_max_tick_rows_decodes_the_listeners_closest_to_running_dry_first(decoder):
    """One row a tick (`max_tick_rows` 1) and three streams with chunks at one tick: a new stream (no audio out yet)
    goes first, then the one whose listener has 1 frame (80 ms) of audio, then the one with 15 frames (1.2 s); the
    others wait each time (deferred). Every stream's audio still equals its whole decode."""
    rng = np.random.default_rng(9)
    a, b, c = random_codes(rng, 18), random_codes(rng, 3), random_codes(rng, 2)
    want = expected_audio(decoder, [(a, None), (b, None), (c, None)])

    async def scenario():
        engine = RecordingEngine(decoder, max_streams=4, max_tick_rows=1)
        engine.start()
        try:
            ahead, behind = engine.open(F32), engine.open(F32)
            engine.submit(ahead, a[:15], False)
            engine.submit(behind, b[:1], False)
            got = {ahead.slot: [await ahead.outputs.get()], behind.slot: [await behind.outputs.get()]}
            first_steps = list(engine.steps)
            engine.steps.clear()
            # Before the engine's next tick: the rest of both, and a new stream's only chunk.
            engine.submit(ahead, a[15:], True)
            engine.submit(behind, b[1:], True)
            new = engine.open(F32)
            engine.submit(new, c, True)
            for stream in (ahead, behind, new):
                got.setdefault(stream.slot, []).append(await stream.outputs.get())
            deferred = engine.metrics.server.registry.get_sample_value("omni_codec_deferred_rows_total")
            pcm = [np.concatenate([decode_pcm(x.pcm, F32) for x in got[s.slot]]) for s in (ahead, behind, new)]
            return first_steps, list(engine.steps), (ahead.slot, behind.slot, new.slot), deferred, pcm
        finally:
            await engine.stop()

    first_steps, steps, (ahead, behind, new), deferred, pcm = asyncio.run(scenario())
    rows = [step for step in steps if step]  # a tick may also be a new stream's reset alone
    first_rows = [step for step in first_steps if step]
    assert first_rows == [[(ahead, 15)], [(behind, 1)]]  # both new: in the order they opened
    assert rows == [[(new, 2)], [(behind, 2)], [(ahead, 3)]]
    assert deferred == 1 + 2 + 1
    for got, expected in zip(pcm, want, strict=True):
        assert_same_audio(got, expected, F32)


def test_a_row_delivered_after_its_listener_ran_dry_is_counted_late(decoder):
    """A listener starts at a stream's first audio (1 frame, 80 ms): a row delivered 300 ms later is late by more
    than 200 ms; the next, with 1.28 s played out of 16 frames sent, is not."""
    codes = random_codes(np.random.default_rng(6), 18)

    async def scenario():
        engine = CodecEngine(decoder, max_streams=2)
        engine.start()
        try:
            stream = engine.open(F32)
            engine.submit(stream, codes[:1], False)
            await stream.outputs.get()
            await asyncio.sleep(0.3)
            engine.submit(stream, codes[1:16], False)
            await stream.outputs.get()
            engine.submit(stream, codes[16:], True)
            await stream.outputs.get()
            registry = engine.metrics.server.registry
            return [registry.get_sample_value(f"omni_codec_late_ms_{k}") for k in ("count", "sum")]
        finally:
            await engine.stop()

    count, late_ms = asyncio.run(scenario())
    assert count == 1 and late_ms > 200


@pytest.mark.parametrize(
    "merge_frames, rows, fmt", [(6, [6, 4, 5], S16), (6, [6, 4, 5], F32), (1, [1, 2, 3, 4, 5], S16)]
)
def test_queued_chunks_of_a_stream_merge_into_one_row_up_to_merge_frames(decoder, merge_frames, rows, fmt):
    rng = np.random.default_rng(11)
    sizes = [1, 2, 3, 4, 5]
    codes = random_codes(rng, sum(sizes))
    (want,) = expected_audio(decoder, [(codes, None)])

    async def scenario():
        engine = CodecEngine(decoder, max_streams=2, merge_frames=merge_frames)
        engine.start()
        try:
            stream = engine.open(fmt)
            starts = np.cumsum([0, *sizes])
            for start, end in zip(starts[:-1], starts[1:], strict=True):  # all queued before the engine's first tick
                engine.submit(stream, codes[start:end], False)
            engine.submit(stream, None, False)  # input ends without a `last` chunk
            chunks = []
            while (item := await stream.outputs.get()) is not END_OF_STREAM:
                chunks.append(item)
            registry = engine.metrics.server.registry
            return chunks, registry.get_sample_value("omni_codec_frames_decoded_total"), engine
        finally:
            await engine.stop()

    chunks, frames, engine = asyncio.run(scenario())
    # Each row comes back as one piece of audio (one gRPC message), in frame order, with its frame and sample
    # offsets; together they are the whole utterance's audio.
    assert [c.num_frames for c in chunks] == rows and frames == sum(sizes)
    assert [c.first_frame_index for c in chunks] == list(np.cumsum([0, *rows[:-1]]))
    assert [c.first_sample_index for c in chunks] == [f * SPF for f in np.cumsum([0, *rows[:-1]])]
    assert [c.num_samples for c in chunks] == [n * SPF for n in rows] and not any(c.last for c in chunks)
    assert len(set(c.compute_ms for c in chunks)) == len(rows)  # one step per row
    assert_same_audio(np.concatenate([decode_pcm(c.pcm, fmt) for c in chunks]), want, fmt)


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_cancellation_and_slot_reuse_under_load_never_leak(model_dir, decoder, async_scheduling):
    rng = np.random.default_rng(2)
    rounds = [[(random_codes(rng, int(rng.integers(3, 7))), rng.random() < 0.5) for _ in range(6)] for _ in range(3)]
    kept = [codes for batch in rounds for codes, cancel in batch if not cancel]
    want = expected_audio(decoder, [(c, None) for c in kept])

    async def cancelled_stream(svc, codes):
        call = svc.stub.Decode()
        await call.write(open_message(svc.identity))
        assert (await call.read()).WhichOneof("kind") == "started"
        await call.write(chunk_message(codes[:2], 0, False))
        assert (await call.read()).audio.num_frames == 2
        await call.write(chunk_message(codes[2:3], 2, False))  # in flight when cancelled
        call.cancel()
        return None

    async def scenario():
        # 4 slots for 6 streams per round: slots are reused within and across rounds.
        async with Running(model_dir, max_streams=4, async_scheduling=async_scheduling) as svc:
            got = []
            for batch in rounds:
                pending = list(batch)
                while pending:
                    wave, pending = pending[:4], pending[4:]
                    got += await asyncio.gather(
                        *(
                            cancelled_stream(svc, c) if cancel else decode_stream(svc.stub, svc.identity, c, [1, 2])
                            for c, cancel in wave
                        )
                    )
                    await svc.wait_idle()
            return [g for g in got if g is not None], svc.metrics

    got, metrics = asyncio.run(scenario())
    assert len(got) == len(kept)
    for g, w in zip(got, want, strict=True):
        assert_same_audio(g, w, S16)
    assert metrics.server.registry.get_sample_value("omni_codec_streams_total", {"outcome": "cancelled"}) >= 1


def test_refuses_when_full_then_admits_again(model_dir, decoder):
    codes = random_codes(np.random.default_rng(3), 3)
    (want,) = expected_audio(decoder, [(codes, None)])

    async def scenario():
        async with Running(model_dir, max_streams=2) as svc:
            holders = [svc.stub.Decode() for _ in range(2)]
            for call in holders:
                await call.write(open_message(svc.identity))
                assert (await call.read()).WhichOneof("kind") == "started"
            assert (await svc.stub.GetLoad(codec_pb2.GetLoadRequest())).load.active_streams == 2
            refused = svc.stub.Decode()
            await refused.write(open_message(svc.identity))
            with pytest.raises(grpc.aio.AioRpcError) as full:
                await refused.read()
            assert full.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            await holders[0].done_writing()  # an empty stream ends normally and frees its slot
            assert (await holders[0].read()).summary.num_frames == 0
            while await svc.active_streams() == 2:
                await asyncio.sleep(0.01)
            pcm = await decode_stream(svc.stub, svc.identity, codes, [1])
            holders[1].cancel()
            await svc.wait_idle()
            return pcm

    assert_same_audio(asyncio.run(scenario()), want, S16)


def test_bad_input_is_invalid_argument_while_other_streams_continue(model_dir, decoder):
    rng = np.random.default_rng(4)
    good_codes = random_codes(rng, 8)
    (want,) = expected_audio(decoder, [(good_codes, None)])
    codes = random_codes(rng, 2)

    async def failing(svc, messages, code, match):
        call = svc.stub.Decode()
        for m in messages:
            await call.write(m)
        with pytest.raises(grpc.aio.AioRpcError) as error:
            while (await call.read()) != grpc.aio.EOF:
                pass
        assert error.value.code() == code, error.value.details()
        assert match in error.value.details()

    async def scenario():
        async with Running(model_dir, max_streams=8) as svc:
            ident = svc.identity
            wrong_model = common_pb2.ModelIdentity()
            wrong_model.CopyFrom(ident)
            wrong_model.codec_id = "qwen3-tts-tokenizer-12hz:0000000000000000"
            out_of_range = codes.copy()
            out_of_range[1, 5] = 2048
            good = asyncio.create_task(decode_stream(svc.stub, ident, good_codes, [1]))
            invalid = grpc.StatusCode.INVALID_ARGUMENT
            narrow = chunk_message(codes[:, :15], 0, False, num_codebooks=15)
            mislabelled = chunk_message(codes, 0, False, num_codebooks=15)
            await asyncio.gather(
                failing(svc, [open_message(ident), narrow], invalid, "15 codebooks"),
                failing(svc, [open_message(ident), mislabelled], invalid, "15 codebooks"),
                failing(svc, [open_message(ident), chunk_message(out_of_range, 0, True)], invalid, "[0, 2048)"),
                failing(
                    svc,
                    [open_message(ident), chunk_message(codes, 0, True), chunk_message(codes, 2, False)],
                    invalid,
                    "after the last chunk",
                ),
                failing(svc, [open_message(ident), chunk_message(codes, 1, False)], invalid, "expected 0"),
                failing(svc, [chunk_message(codes, 0, False)], invalid, "first message must be `open`"),
                failing(svc, [open_message(ident), open_message(ident)], invalid, "only chunks"),
                failing(svc, [open_message(wrong_model)], grpc.StatusCode.FAILED_PRECONDITION, "codec id"),
                failing(svc, [open_message(ident, fmt=7)], invalid, "sample format"),
            )
            got = await good
            await svc.wait_idle()
            return got

    assert_same_audio(asyncio.run(scenario()), want, S16)


def test_model_info_load_and_metrics(model_dir):
    async def scenario():
        async with Running(model_dir, max_streams=3) as svc:
            info = await svc.stub.GetModelInfo(codec_pb2.GetModelInfoRequest())
            load = (await svc.stub.GetLoad(codec_pb2.GetLoadRequest())).load
            port = svc.metrics.server.start(0, host="127.0.0.1")
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
            svc.metrics.server.stop()
            return info, load, body

    info, load, body = asyncio.run(scenario())
    assert info.model == model_identity(model_dir)
    assert (info.sample_rate, info.samples_per_frame, info.num_codebooks, info.codebook_size) == (24000, 1920, 16, 2048)
    assert (load.capacity, load.active_streams, load.accepting) == (3, 0, True)
    for series in ("active_streams", "tick_ms_bucket", "batch_size_bucket", "coalesce_wait_ms", "frames_decoded"):
        assert f"omni_codec_{series}" in body
    assert "omni_codec_audio_seconds_total 0.08" in body  # the warm-up frame


def test_omni_codec_command_serves_and_shuts_down_on_sigterm(model_dir):
    port = free_port()
    env = {**os.environ, "OMNI_CODEC_MAX_STREAMS": "2"}
    cmd = [sys.executable, "-m", "omni.cli", "codec", "--model", str(model_dir), "--host", "127.0.0.1"]
    proc = subprocess.Popen([*cmd, "--port", str(port)], env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:

        async def check():
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                await wait_serving(channel, "omni.codec.v1.CodecService", proc)
                load = await codec_pb2_grpc.CodecServiceStub(channel).GetLoad(codec_pb2.GetLoadRequest())
                assert load.load.capacity == 2  # from the environment

        asyncio.run(check())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert '"msg": "codec stopped"' in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_tick_trace_logs_what_each_tick_decoded(decoder, caplog):
    codes = random_codes(np.random.default_rng(5), 6)

    async def scenario() -> int:
        engine = CodecEngine(decoder, max_streams=2, merge_frames=1, trace_ticks=True)
        engine.start()
        try:
            stream = engine.open(S16)
            for start, end in [(0, 1), (1, 3), (3, 6)]:
                engine.submit(stream, codes[start:end], False)
            engine.submit(stream, None, False)
            pieces = 0
            while await stream.outputs.get() is not END_OF_STREAM:
                pieces += 1
            return pieces
        finally:
            await engine.stop()

    with caplog.at_level("INFO", logger="omni.codec.engine"):
        pieces = asyncio.run(scenario())
    ticks = [r.fields for r in caplog.records if r.getMessage() == "codec.tick"]
    decoding = [t for t in ticks if t["rows"]]
    # One row a tick (merge_frames 1): 1, 2 and 3 frames, the first of them the stream's first row; the reset of the
    # new stream is in some tick; a tick takes at least its engine thread's time.
    assert pieces == 3 and [t["frames"] for t in decoding][:3] == [1, 2, 3]
    assert sum(t["first_rows"] for t in ticks) == 1 and decoding[0]["first_rows"] == 1
    assert sum(t["fresh"] for t in ticks) == 1 and max(t["longest_row"] for t in ticks) == 3
    assert all(t["tick_ms"] >= t["compute_ms"] >= 0 and t["idle_ms"] >= 0 for t in ticks)


def test_max_tick_rows_is_a_validated_setting():
    from omni.services.common.config import load_config

    with pytest.raises(ValueError, match="max_tick_rows must be >= 0, got -1"):
        CodecConfig(max_tick_rows=-1).validate()
    assert load_config(CodecConfig, "codec", env={"OMNI_CODEC_MAX_TICK_ROWS": "128"}).max_tick_rows == 128
    assert CodecConfig().max_tick_rows == 128  # the default since runs 73-76 (docs/benchmarks.md)


def test_async_scheduling_is_a_setting_that_excludes_coalescing(decoder):
    from omni.services.codec.engine import engine_from_config
    from omni.services.common.config import load_config

    assert not CodecConfig().async_scheduling
    config = load_config(CodecConfig, "codec", env={"OMNI_CODEC_ASYNC_SCHEDULING": "1"})
    assert config.async_scheduling
    engine = engine_from_config(decoder, CodecConfig(device="cpu", max_streams=2, async_scheduling=True), None, 24000)
    assert engine.async_scheduling
    with pytest.raises(ValueError, match="async_scheduling excludes coalescing"):
        CodecConfig(async_scheduling=True, min_batch=2, max_wait_ms=5).validate()
    with pytest.raises(ValueError, match="async_scheduling excludes coalescing"):
        CodecEngine(decoder, max_streams=2, min_batch=2, max_wait_ms=5, async_scheduling=True)
    CodecConfig(async_scheduling=True, min_batch=2).validate()  # no window: no coalescing


def test_the_measured_codec_kernels_are_on_by_default_and_can_be_turned_off():
    """Every codec kernel setting won its GPU A/B: fast_sine (run 89), window_kernel (run 91), rvq_kernel,
    attention_kernel and transformer_kernels (run 93, then in the stack: runs 95 and 97), residual_snake_kernel (run
    101), history_kernel (run 117), add_norm_kernel (run 120), window_pair_kernel (run 125's ticks),
    history_swap_kernel (run 128's), upsample_channels_last (run 132's), conv1_kernel (run 234, an H100) and
    conv2_kernel (run 235; docs/benchmarks.md). Each can be turned off
    from the environment. On CPU none of them applies: the decoder stays PyTorch's."""
    from omni.services.codec.engine import engine_from_config
    from omni.services.common.config import load_config

    from tests.codec_streams import tiny_codec_decoder

    settings = (
        "fast_sine",
        "window_kernel",
        "rvq_kernel",
        "attention_kernel",
        "transformer_kernels",
        "residual_snake_kernel",
        "history_kernel",
        "add_norm_kernel",
        "window_pair_kernel",
        "history_swap_kernel",
        "upsample_channels_last",
        "conv1_kernel",
        "conv2_kernel",
    )
    config = CodecConfig()
    assert all(getattr(config, name) for name in settings)
    spellings = ("0", "false", "no", "0", "off", "False", "0", "off", "no", "0", "off", "0", "false")
    env = {f"OMNI_CODEC_{name.upper()}": value for name, value in zip(settings, spellings, strict=True)}
    off = load_config(CodecConfig, "codec", env=env)
    assert not any(getattr(off, name) for name in settings)
    decoder = tiny_codec_decoder(torch.float32)
    engine_from_config(decoder, CodecConfig(device="cpu", max_streams=2, min_batch=1), None, sample_rate=24000)
    assert not any(getattr(decoder, name) for name in decoder.KERNEL_SWITCHES)
    assert not config.unit_tail_kernel  # run 105: the 128x15 graph step 4.7% longer with it
    assert not config.qk_rope_kernel  # run 125: ticks of 40 / 81 / 128 rows -0.0% / -0.3% / +0.1%
    assert not config.transposed_kernel  # run 242: 128x2 +0.4%, 128x4 +0.2% (blocks 0, 2, 3)


def test_check_codec_async_tool_finds_both_modes_equal_to_the_whole_decode(tmp_path):
    """tools/check_codec_async.py (run on the GPU before a stack A/B of the codec's async scheduling) on this CPU:
    12 streams in each mode against the whole decode."""
    out = tmp_path / "check.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools/check_codec_async.py"), "--device", "cpu", "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    assert report["streams"] == 12 and not report["graphs"]
    for mode in ("sync", "async"):
        assert report[mode]["passed"] and report[mode]["max_abs_error"] <= 1.5 / 32767
