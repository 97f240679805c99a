"""The codec engine: one asyncio task owns the decoder and its per-slot streaming state.

RPC handlers never touch tensors. They `open` a stream (which leases a slot), `submit` chunks to it and read
decoded audio from its `outputs` (a queue of its own, or one a DecodeMany call shares among its streams);
`release` gives the slot back. Each tick the engine task takes the oldest pending chunk of every stream, with the
chunks queued behind it while their frames fit one row of `merge_frames` (15 by default, the longest captured chunk
length), and runs one batched decode in a worker thread (so the event loop keeps serving RPCs), then hands each
stream its row's PCM as one piece. A row never exceeds `merge_frames`, so step shapes stay at the clients' chunk
sizes instead of padding every stream to the most backlogged one; merging lets a stream that fell behind (the
talker's ramp chunks of 1, 2, 4 and 8 frames come a few steps apart) catch up in one row instead of one tick per
chunk. The decoder is streaming-exact, so a merged row decodes to the same audio as its chunks one by one (within
float rounding), and it goes back as one audio message: the codec's event loop spends more on each gRPC message
than on anything else per chunk.

Slot hygiene: a released slot goes back to the free list at once. Its next owner is `fresh`: the engine resets
it (and primes it with reference codes) in a later step than any step of the previous owner (steps run one at a
time), before its first decode, and audio of a step is delivered to the stream object it was decoded for, which
drops it once released. So no state or output of one stream can reach another.

First chunks apart (off by default, `first_chunks_apart`): when a tick holds both new streams' first rows and
other rows, the first rows decode in a step of their own and are sent before the rest are decoded. A first chunk is
one frame: its step is short, so time to first audio loses most of a full tick (tens of ms at hundreds of streams)
for one more step's host overhead on the ticks that have a new stream.

Rows by lead (`max_tick_rows`, 128 by default): when more streams have chunks than `max_tick_rows`, a tick decodes
the rows of the streams whose listeners are closest to running dry: a listener started playing at the stream's
first decoded audio, so its lead is that moment plus the audio decoded since, less now (new streams first). The
others wait for the next tick, which starts at once, and merge what they queue meanwhile. Under load a tick of every
stream takes long enough that a stream near the end of its lead waits behind streams with seconds of it.

Late rows: a row delivered after its listener's lead ran out (by that reckoning) is counted with how late it was
(`late_ms`): the codec's own view of a gap, before the gateway and the network add theirs.

Coalescing (off by default): with `min_batch > 1` and `max_wait_ms > 0`, a tick waits up to `max_wait_ms`
from when the engine could start it (the previous tick's end, or a chunk's arrival at an idle engine) for
`min_batch` streams to be ready, unless a stream's first chunk is waiting (time to first audio beats batch size).
The window is not counted from the oldest chunk's arrival: under load that chunk came during the previous tick, so
such a window had always run out and a tick never waited. Fewer, fuller ticks pay a step's fixed part less often
and leave a shared GPU to the talker in between.

Asynchronous scheduling (`async_scheduling`, off by default): tick N+1 is planned and queued on the device before
tick N's audio is read back, so the GPU has the codec's next decode while the host packs and hands out the last
one's audio (a GPU the talker shares stood idle ~11% of the time at 512 streams when both processes were between
steps). Tick N+1 takes the chunks that arrived while N was being launched and read back, as a tick of the
synchronous engine takes those that arrived during the one before it. Device work runs in launch order on one
stream, so a stream's rows in N+1 decode from the state N left, and a slot reset in N+1 follows N's decode of its
previous owner; audio is still delivered tick by tick in order. It excludes coalescing, whose wait would hold back
the tick in flight.

On a CUDA device (`engine_from_config`) the decode runs through `CodecGraphs`: one CUDA graph per (batch bucket,
chunk length), captured when the engine is built, i.e. before the service reports SERVING. A batch replays the
graphs that hold it at the least measured cost (`codec_graphs.plan_replays`: spare rows use a scratch slot past
`max_streams`, short chunks are right-padded); a batch with a chunk longer than the longest captured length, or a
reference priming, runs eagerly. The `decode_calls{path}` counter says which path each decode took.
"""

import asyncio
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from omni.services.codec.config import CodecConfig
from omni.services.codec.metrics import CodecMetrics
from omni.services.common.engine_task import stop_engine_task
from omni.services.common.logging import log_request
from omni.services.common.packing import INT16_SCALE

from omni.device import HostCopy
from omni.models.qwen3_tts.codec_graphs import StepWaves, decode_eager
from omni.proto import common_pb2

log = logging.getLogger("omni.codec.engine")


class EngineFull(Exception):
    """Every slot is taken."""


class EngineClosed(Exception):
    """The engine no longer admits streams (shutting down)."""


class DecodeFailed(Exception):
    """The decode step raised; the streams in it are ended."""


@dataclass
class DecodedChunk:
    """PCM of one decoded row (one or more consecutive submitted chunks), ready for the wire."""

    pcm: bytes
    num_samples: int
    first_sample_index: int
    first_frame_index: int
    num_frames: int
    last: bool
    queue_ms: float
    compute_ms: float


END_OF_STREAM = object()  # put on `outputs` once every submitted chunk has been decoded and input ended


@dataclass
class _Pending:
    codes: np.ndarray | None  # [t, 16] int64; None marks the end of input without a `last` chunk
    last: bool
    arrived: float


@dataclass
class _Tick:
    """One decode step as launched: what it holds, and its audio on the way to the host (None: no rows to decode)."""

    fresh: list["Stream"]
    work: list[tuple["Stream", list[_Pending]]]
    pcm: "StepPcm | None"
    has_codes: list[bool]  # per work item: whether it decodes a row (False: an end marker alone)
    launched_at: float


class Outputs(Protocol):
    """Where a stream's decoded audio goes: its own queue, or (DecodeMany) a call's queue shared by its streams."""

    def put_nowait(self, item: object) -> None: ...


class Stream:
    """One utterance: its slot, its undecoded chunks and where its decoded audio goes."""

    def __init__(
        self, slot: int, sample_format: int, ref_codes: np.ndarray | None, outputs: Outputs | None = None
    ) -> None:
        self.slot = slot
        self.sample_format = sample_format
        self.ref_codes = ref_codes
        self.fresh = True  # needs reset (and priming) before its first decode
        self.pending: list[_Pending] = []
        self.outputs: Outputs = asyncio.Queue() if outputs is None else outputs
        self.decoded = asyncio.Event()  # set after each delivery; lets a reader wait for its backlog to drain
        self.frames_submitted = 0
        self.frames_done = 0
        self.samples_done = 0
        self.chunks_done = 0
        self.first_out_at: float | None = None  # perf_counter of its first decoded audio: its listener's start
        self.released = False

    @property
    def backlog_frames(self) -> int:
        """Frames submitted and not yet decoded."""
        return self.frames_submitted - self.frames_done

    def lead_s(self, now: float, frame_s: float) -> float:
        """How far its decoded audio runs ahead of a listener who started at its first audio (-inf before that)."""
        if self.first_out_at is None:
            return float("-inf")
        return self.first_out_at + self.frames_done * frame_s - now


class CodecEngine:
    def __init__(
        self,
        decoder,
        max_streams: int,
        min_batch: int = 1,
        max_wait_ms: float = 0.0,
        metrics: CodecMetrics | None = None,
        sample_rate: int = 24000,
        graph_buckets: Sequence[int] = (),
        graph_chunk_lengths: Sequence[int] = (1, 4, 8, 15),
        merge_frames: int = 15,
        first_chunks_apart: bool = False,
        trace_ticks: bool = False,
        max_tick_rows: int = 0,
        async_scheduling: bool = False,
    ) -> None:
        """`merge_frames`: a stream's pending chunks decode in one row while their frames sum to at most this (the
        oldest always goes; 1: one chunk per stream per step). With graphs it is capped at the longest captured
        chunk length, so a merged row never falls back to an eager step.
        `first_chunks_apart`: a tick that holds new streams' first rows and other rows runs as two steps, the first
        rows' before the rest, so a first chunk waits for a small step instead of the whole tick.
        `trace_ticks`: log one `codec.tick` line per tick (what it decoded, how long it took and how long since the
        previous one).
        `max_tick_rows`: at most this many rows a tick, those of the streams with the least lead first (0: every
        stream with chunks).
        `async_scheduling`: queue each tick before reading the previous one back (see the module docstring)."""
        self.decoder = decoder
        self.max_streams = max_streams
        self.min_batch = min_batch
        self.max_wait_s = max_wait_ms / 1000.0
        if async_scheduling and self.coalescing:
            raise ValueError("async_scheduling excludes coalescing: set min_batch 1 or max_wait_ms 0")
        self.metrics = metrics or CodecMetrics()
        self.samples_per_frame = decoder.samples_per_frame
        self.sample_rate = sample_rate
        self.frame_s = self.samples_per_frame / sample_rate
        self.max_tick_rows = max_tick_rows
        self.async_scheduling = async_scheduling
        # With graphs the state has one more slot than streams: CodecGraphs' scratch row for padding.
        self.state = decoder.new_state(max_streams + (1 if graph_buckets else 0))
        self.graphs = None
        if graph_buckets:
            from omni.models.qwen3_tts.codec_graphs import CodecGraphs

            start = time.perf_counter()
            self.graphs = CodecGraphs(decoder, self.state, graph_buckets, graph_chunk_lengths)
            log.info(
                "codec: captured %d CUDA graphs (batch buckets %s x chunk lengths %s) in %.1f s; replay ms %s",
                len(self.graphs.graphs),
                self.graphs.buckets,
                self.graphs.chunk_lengths,
                time.perf_counter() - start,
                {f"{b}x{t}": round(ms, 2) for (b, t), ms in sorted(self.graphs.replay_ms.items())},
            )
        self.merge_frames = min(merge_frames, self.graphs.chunk_lengths[-1]) if self.graphs else merge_frames
        self.first_chunks_apart = first_chunks_apart
        self.trace_ticks = trace_ticks
        self._last_tick_end = time.perf_counter()
        self.free = list(reversed(range(max_streams)))  # pop() leases the lowest slot first
        self.streams: dict[int, Stream] = {}
        self.accepting = True
        self.wake = asyncio.Event()
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="codec-engine")
        self.task: asyncio.Task | None = None
        self.metrics.capacity.set(max_streams)

    @property
    def coalescing(self) -> bool:
        return self.min_batch > 1 and self.max_wait_s > 0

    # ---- handler side (event-loop thread) ----

    def open(self, sample_format: int, ref_codes: np.ndarray | None = None, outputs: Outputs | None = None) -> Stream:
        """Lease a slot for a new stream (its audio goes to `outputs`, by default a queue of its own); raises
        EngineFull or EngineClosed."""
        if not self.accepting:
            raise EngineClosed("the codec is shutting down")
        if not self.free:
            raise EngineFull(f"all {self.max_streams} codec streams are busy")
        stream = Stream(self.free.pop(), sample_format, ref_codes, outputs)
        self.streams[stream.slot] = stream
        self.metrics.active_streams.set(len(self.streams))
        self.wake.set()  # reset and prime right away, before the first chunk arrives
        return stream

    def submit(self, stream: Stream, codes: np.ndarray | None, last: bool) -> None:
        """Queue a chunk of int64 codes [t, 16] for decoding (codes=None: input ended without a `last` chunk). The
        engine keeps codes in numpy until they are staged for the device: a torch call per chunk hands the GIL over."""
        if stream.released:
            return
        stream.pending.append(_Pending(codes, last, time.perf_counter()))
        stream.frames_submitted += 0 if codes is None else codes.shape[0]
        self.wake.set()

    def release(self, stream: Stream) -> None:
        """End a stream (finished, cancelled or failed): its slot is free for the next stream at once."""
        if stream.released:
            return
        stream.released = True
        stream.pending.clear()
        del self.streams[stream.slot]
        self.free.append(stream.slot)
        self.metrics.active_streams.set(len(self.streams))

    # ---- engine task ----

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name="codec-engine")

    async def stop(self) -> None:
        """Stop the engine task (call after the server has drained its streams)."""
        self.accepting = False
        await stop_engine_task(self.task, self.executor)

    async def _run(self) -> None:
        in_flight: _Tick | None = None  # async scheduling: the tick queued last, not yet read back
        while True:
            if in_flight is None:
                await self.wake.wait()
                if self.coalescing:
                    self.wake.clear()
                    await self._coalesce()
            self.wake.clear()
            fresh = [s for s in self.streams.values() if s.fresh]
            work = [(s, self._take_chunks(s)) for s in self._next_rows()]
            for s in fresh:
                s.fresh = False
            if any(s.pending for s in self.streams.values()):
                self.wake.set()  # streams that are behind get their next chunk in the next step
            first = [(s, chunks) for s, chunks in work if s.frames_done == 0] if self.first_chunks_apart else []
            if first and len(first) < len(work):
                # Time to first audio: the new streams' rows (short, cheap) are decoded and sent before the others'.
                rest = [(s, chunks) for s, chunks in work if s.frames_done > 0]
                planned = [(fresh, first), ([], rest)]
            elif fresh or work:
                planned = [(fresh, work)]
            else:
                planned = [None] if in_flight is not None else []  # nothing new: read the tick in flight back
            for tick in planned:
                in_flight = await self._tick(tick, in_flight)

    async def _tick(
        self, planned: tuple[list[Stream], list[tuple[Stream, list[_Pending]]]] | None, in_flight: _Tick | None
    ) -> _Tick | None:
        """Queue a decode step (`planned`: its fresh streams and rows) in the engine thread and read one back, this
        one or (async scheduling) the one in flight; hand each stream of the step read back its audio. Returns the
        step now in flight. A step that fails ends the streams in it, not the service; one that fails to launch
        leaves the step in flight to be read back and delivered."""
        start = time.perf_counter()
        try:
            loop = asyncio.get_running_loop()
            launched, done, results, compute_ms = await loop.run_in_executor(
                self.executor, self._advance, planned, in_flight
            )
        except Exception as e:  # reading back failed: this step's and the one in flight's streams end
            log.exception("codec step failed")
            self._fail([planned, in_flight and (in_flight.fresh, in_flight.work)], e)
            return None
        if isinstance(launched, Exception):
            log.error("codec step failed", exc_info=launched)
            self._fail([planned], launched)
            launched = None
        if done is None:
            return launched
        tick_ms = (time.perf_counter() - start) * 1000.0
        self.metrics.tick_ms.observe(tick_ms)
        self.metrics.tick_compute_ms.observe(compute_ms)
        work = done.work
        if work:
            self.metrics.batch_size.observe(len(work))
        if self.trace_ticks:
            frames = [sum(p.codes.shape[0] for p in chunks if p.codes is not None) for _, chunks in work]
            log_request(
                log, "codec.tick", fresh=len(done.fresh), rows=len(work), frames=sum(frames),
                first_rows=sum(1 for s, _ in work if s.frames_done == 0), longest_row=max(frames, default=0),
                idle_ms=(start - self._last_tick_end) * 1000.0, compute_ms=compute_ms, tick_ms=tick_ms,
            )  # fmt: skip
        self._last_tick_end = time.perf_counter()
        for (stream, chunks), pcm in zip(work, results, strict=True):
            self._deliver(stream, chunks, pcm, done.launched_at, tick_ms)
        return launched

    @staticmethod
    def _fail(ticks: list, error: Exception) -> None:
        """End the streams of these (fresh, work) steps with DecodeFailed (each stream once)."""
        streams = [s for fresh, work in filter(None, ticks) for s in [*fresh, *(s for s, _ in work)]]
        for s in {id(s): s for s in streams}.values():
            s.outputs.put_nowait(DecodeFailed(f"decode step failed: {error}"))

    def _next_rows(self) -> list[Stream]:
        """The streams this tick decodes a row of: every one with chunks, or with `max_tick_rows` the least lead's."""
        ready = [s for s in self.streams.values() if s.pending]
        if not self.max_tick_rows or len(ready) <= self.max_tick_rows:
            return ready
        now = time.perf_counter()
        ready.sort(key=lambda s: s.lead_s(now, self.frame_s))  # stable: new streams in the order they opened
        self.metrics.deferred_rows.inc(len(ready) - self.max_tick_rows)
        return ready[: self.max_tick_rows]

    def _take_chunks(self, stream: Stream) -> list[_Pending]:
        """A stream's oldest chunk, the chunks after it while all fit `merge_frames`, and the end marker if it
        follows them (or the marker alone)."""
        taken, frames = [], 0
        for p in stream.pending:
            if p.codes is not None:
                if taken and frames + p.codes.shape[0] > self.merge_frames:
                    break
                frames += p.codes.shape[0]
            taken.append(p)
            if p.codes is None:
                break
        stream.pending = stream.pending[len(taken) :]
        return taken

    async def _coalesce(self) -> None:
        """Wait until min_batch streams have chunks, at most max_wait from now; never when a first chunk is waiting."""
        start = time.perf_counter()
        while True:
            ready = [s for s in self.streams.values() if s.pending]
            if not ready or len(ready) >= self.min_batch or any(s.frames_done == 0 for s in ready):
                break
            remaining = start + self.max_wait_s - time.perf_counter()
            if remaining <= 0:
                break
            try:
                await asyncio.wait_for(self.wake.wait(), remaining)
            except TimeoutError:
                break
            self.wake.clear()
        self.metrics.coalesce_wait_ms.observe((time.perf_counter() - start) * 1000.0)

    def _advance(
        self, planned: tuple[list[Stream], list[tuple[Stream, list[_Pending]]]] | None, in_flight: _Tick | None
    ) -> tuple[_Tick | Exception | None, _Tick | None, list[bytes | None], float]:
        """Engine thread: launch `planned`, then read one step back: this one (synchronous scheduling) or the one in
        flight before it (asynchronous). Returns (the step now in flight, or the error that kept it from launching
        while another was in flight; the step read back; its rows' PCM; the ms this thread spent)."""
        start = time.perf_counter()
        launched = None
        if planned is not None:
            try:
                launched = self._launch(*planned)
            except Exception as e:  # returned, not raised: the step in flight is still read back
                if in_flight is None or not self.async_scheduling:
                    raise
                launched = e
        if not self.async_scheduling:
            in_flight, launched = launched, None
        if in_flight is None:
            return launched, None, [], (time.perf_counter() - start) * 1000.0
        results = self._collect(in_flight)
        return launched, in_flight, results, (time.perf_counter() - start) * 1000.0

    def _launch(self, fresh: Sequence[Stream], work: Sequence[tuple[Stream, list[_Pending]]]) -> _Tick:
        """Engine thread: reset/prime new slots, then queue one batched decode of one row per stream and the copy of
        its PCM to the host; nothing here waits for the device."""
        launched_at = time.perf_counter()
        self.decoder.reset_streams(self.state, [s.slot for s in fresh])
        primes = [s for s in fresh if s.ref_codes is not None and s.ref_codes.shape[0] > 0]
        if primes:
            # Priming is a decode whose audio is dropped: the reference is left context only.
            self._decode([s.slot for s in primes], [s.ref_codes for s in primes])
        # _take_chunks gives each stream one or more chunks (one row), maybe followed by the end marker, or the
        # marker alone.
        codes_of = [[p.codes for p in chunks if p.codes is not None] for _, chunks in work]
        batch = [(s, codes) for (s, _), codes in zip(work, codes_of, strict=True) if codes]
        rows = [codes[0] if len(codes) == 1 else np.concatenate(codes) for _, codes in batch]
        pcm = None
        if batch:
            waves = self._decode([s.slot for s, _ in batch], rows)
            pcm = StepPcm(waves, [s.sample_format for s, _ in batch])
        return _Tick(list(fresh), list(work), pcm, [bool(codes) for codes in codes_of], launched_at)

    def _collect(self, tick: _Tick) -> list[bytes | None]:
        """Engine thread: wait for a launched step's audio; each work item's PCM bytes (None for an end marker
        alone)."""
        row_pcm = iter(tick.pcm.rows() if tick.pcm is not None else [])
        return [next(row_pcm) if has_codes else None for has_codes in tick.has_codes]

    def _decode(self, slots: list[int], chunks: list[np.ndarray]) -> StepWaves:
        """One batched decode: a graph replay when a captured (bucket, chunk length) holds it, else eager."""
        if self.graphs is None:
            self.metrics.decode_calls.labels("eager").inc()
            return decode_eager(self.decoder, self.state, slots, chunks)
        fits = self.graphs.fits(max(c.shape[0] for c in chunks))
        self.metrics.decode_calls.labels("graph" if fits else "eager").inc()
        waves = self.graphs.decode_step(slots, chunks)
        if fits:
            self.metrics.planned_ms.observe(self.graphs.planned_ms)
            self.metrics.replayed_frames.inc(self.graphs.planned_frames)
        return waves

    def _deliver(
        self, stream: Stream, chunks: list[_Pending], pcm: bytes | None, step_start: float, tick_ms: float
    ) -> None:
        """Event-loop thread: hand a stream its row's audio as one piece, then the end marker if it was taken
        (dropped if the stream was released). One piece per row, not per submitted chunk: each piece is a gRPC
        message, and most of the event loop's cost per chunk is per message (tools/profile_host.py)."""
        if stream.released:
            return
        decoded = [p for p in chunks if p.codes is not None]
        if decoded:
            for p in decoded:
                self.metrics.chunk_queue_ms.observe((step_start - p.arrived) * 1000.0)
            frames = sum(p.codes.shape[0] for p in decoded)
            samples = frames * self.samples_per_frame
            queue_ms = (step_start - decoded[0].arrived) * 1000.0  # the row's oldest chunk
            now = time.perf_counter()
            if stream.first_out_at is None:
                stream.first_out_at = now
            elif (lead := stream.lead_s(now, self.frame_s)) < 0:
                self.metrics.late_ms.observe(-lead * 1000.0)
            last = decoded[-1].last
            stream.outputs.put_nowait(
                DecodedChunk(pcm, samples, stream.samples_done, stream.frames_done, frames, last, queue_ms, tick_ms)
            )
            stream.frames_done += frames
            stream.samples_done += samples
            stream.chunks_done += 1
            self.metrics.frames_decoded.inc(frames)
            self.metrics.audio_seconds.inc(samples / self.sample_rate)
        if chunks[-1].codes is None:
            stream.outputs.put_nowait(END_OF_STREAM)
        stream.decoded.set()


class StepPcm:
    """A step's waves as each row's PCM bytes in its stream's format, as `packing.encode_pcm` writes them.

    The whole step is converted at once on the device (float32, and int16 = round(clip(x) * 32767) for S16LE
    streams) and copied to the host once per format without waiting for the device (`HostCopy`); `rows()` waits for
    the copies and cuts each row out as a byte slice: no torch call per row.
    """

    def __init__(self, waves: StepWaves, sample_formats: Sequence[int]) -> None:
        flat = torch.cat([b.reshape(-1) for b in waves.blocks]).float()  # a fresh buffer: safe to convert in place
        self.wants_s16 = [f == common_pb2.SAMPLE_FORMAT_PCM_S16LE for f in sample_formats]
        self.f32 = self.s16 = None
        if not all(self.wants_s16):
            self.f32 = HostCopy(flat)  # queued before the in-place conversion below, so it copies the floats
        if any(self.wants_s16):
            scaled = flat if self.f32 is None else flat.clone()  # on CPU the copy is `flat` itself
            self.s16 = HostCopy(scaled.clamp_(-1.0, 1.0).mul_(INT16_SCALE).round_().to(torch.int16))
        widths = [b.shape[-1] for b in waves.blocks]
        starts = np.cumsum([0, *(b.shape[0] * w for b, w in zip(waves.blocks, widths, strict=True))]).tolist()
        self.spans = [(starts[block] + row * widths[block], samples) for block, row, samples in waves.where]

    def rows(self) -> list[bytes]:
        f32 = self.f32.wait().numpy().astype("<f4", copy=False) if self.f32 is not None else None
        s16 = self.s16.wait().numpy().astype("<i2", copy=False) if self.s16 is not None else None
        return [
            (s16 if is_s16 else f32)[offset : offset + samples].tobytes()
            for (offset, samples), is_s16 in zip(self.spans, self.wants_s16, strict=True)
        ]


def pack_step_pcm(waves: StepWaves, sample_formats: Sequence[int]) -> list[bytes]:
    """A step's waves -> each row's PCM bytes in its stream's format (`StepPcm`, read back at once)."""
    return StepPcm(waves, sample_formats).rows()


def codec_graph_buckets(requested: list[int], max_streams: int) -> list[int]:
    """The batch sizes the codec captures: the requested ones, capped at `max_streams`. A step of more streams than
    the largest splits over several replays (`plan_replays`), so unlike the talker the codec needs no graph of
    `max_streams` rows, whose cuDNN autotuning is the longest of its capture."""
    return sorted({min(b, max_streams) for b in requested if b >= 1})


def codec_graph_chunk_lengths(requested: list[int], max_chunk_frames: int) -> list[int]:
    """The chunk lengths the codec captures: the requested ones, capped at `max_chunk_frames` (no chunk is longer)."""
    return sorted({min(t, max_chunk_frames) for t in requested})


def apply_kernels(decoder, config: CodecConfig) -> None:
    """The configured Triton kernels on `decoder` (on its device and dtype; the service applies them on CUDA): the
    vocoder's fused kernels, then the decoder's kernel switches, each a codec setting of the same name."""
    # The Triton kernels are for bf16/fp16 (their fp32 sin is less exact than PyTorch's); fp32 keeps PyTorch's.
    if config.dtype != "float32" and config.fused_kernels != "off":
        from omni.models.qwen3_tts.codec_graphs import fuse_channels_last, fuse_residual_units, fuse_snakebeta

        if config.fused_kernels == "channels_last":
            convs = fuse_channels_last(decoder, fast_sine=config.fast_sine)
            log.info(
                "codec: Triton kernels on: channels-last vocoder (%d convs, fast sine %s)", convs, config.fast_sine
            )
        else:
            fused = fuse_snakebeta(decoder)
            units = fuse_residual_units(decoder) if config.fused_kernels == "all" else 0
            log.info("codec: Triton kernels on: %d SnakeBeta, %d fused residual units", fused, units)
    for setting in decoder.KERNEL_SWITCHES:
        if getattr(config, setting):
            setattr(decoder, setting, True)
            log.info("codec: Triton kernels on: %s", setting)


def engine_from_config(decoder, config: CodecConfig, metrics: CodecMetrics | None, sample_rate: int) -> CodecEngine:
    """The engine the service runs: on CUDA with the configured Triton kernels and CUDA graphs, eager on CPU."""
    on_cuda = torch.device(config.device).type == "cuda"
    if on_cuda:
        # cuDNN's default heuristics pick slow algorithms for the vocoder's long 1-D convs (channels-last above all);
        # autotuned here, the graph warm-ups below time each captured shape once and the graphs keep the choice.
        torch.backends.cudnn.benchmark = True
        if config.dtype == "float32":
            # fp32 is the exact path (chunked = whole within 1e-4): no TF32 in the convs either.
            torch.backends.cudnn.allow_tf32 = False
        apply_kernels(decoder, config)
    buckets: list[int] = []
    lengths = codec_graph_chunk_lengths(config.graph_chunk_lengths, config.max_chunk_frames)
    if on_cuda and config.cuda_graphs:
        buckets = codec_graph_buckets(config.graph_batch_buckets, config.max_streams)
    else:
        log.info("codec: eager decode (device %s, cuda_graphs=%s)", config.device, config.cuda_graphs)
    return CodecEngine(
        decoder,
        config.max_streams,
        config.min_batch,
        config.max_wait_ms,
        metrics,
        sample_rate=sample_rate,
        graph_buckets=buckets,
        graph_chunk_lengths=lengths,
        merge_frames=config.merge_chunk_frames,
        first_chunks_apart=config.first_chunks_apart,
        trace_ticks=config.trace_ticks,
        max_tick_rows=config.max_tick_rows,
        async_scheduling=config.async_scheduling,
    )
