"""The codec gRPC service: the Decode bidi stream over the engine, GetLoad, GetModelInfo, and `serve`."""

import asyncio
import logging
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import grpc
import numpy as np
import torch
from omni.services.codec.config import CodecConfig
from omni.services.codec.engine import (
    END_OF_STREAM,
    CodecEngine,
    DecodedChunk,
    DecodeFailed,
    EngineClosed,
    EngineFull,
    Outputs,
    Stream,
    engine_from_config,
)
from omni.services.codec.metrics import CodecMetrics
from omni.services.common.gc_pauses import GcPauses
from omni.services.common.identity import codec_mismatch, model_identity
from omni.services.common.logging import log_request, ms_since
from omni.services.common.loop_lag import LoopLag
from omni.services.common.many_calls import ManyCall, ManyCalls, ManyStream, Tagged, serve_call
from omni.services.common.packing import PackingError, check_sample_format, unpack_codes
from omni.services.common.server import GrpcService, set_switch_interval

from omni.proto import codec_pb2, codec_pb2_grpc, common_pb2

log = logging.getLogger("omni.codec")
SERVICE_NAME = codec_pb2.DESCRIPTOR.services_by_name["CodecService"].full_name
NUM_CODEBOOKS = 16


class RpcFailure(Exception):
    """Ends the call with a status code and message."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _invalid(message: str) -> RpcFailure:
    return RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, message)


def _broken(error: Exception) -> RpcFailure:
    return RpcFailure(grpc.StatusCode.INTERNAL, f"reading the call failed: {error}")


class ChunkCheck:
    """One stream's rules for its chunks: the codec's codebook count, a size in [1, max_chunk_frames], frames in order
    without a gap, nothing after the `last` chunk (or after the input ended)."""

    def __init__(self, config: CodecConfig, codebook_size: int) -> None:
        self.max_chunk_frames = config.max_chunk_frames
        self.codebook_size = codebook_size
        self.next_frame = 0
        self.ended = False

    def codes(self, chunk: common_pb2.CodecChunk) -> np.ndarray:
        """The chunk's int64 codes [num_frames, 16]; RpcFailure(INVALID_ARGUMENT) when it breaks a rule."""
        if self.ended:
            raise _invalid("chunk after the last chunk")
        if chunk.num_codebooks != NUM_CODEBOOKS:
            raise _invalid(f"chunk has {chunk.num_codebooks} codebooks, the codec needs {NUM_CODEBOOKS}")
        if not 1 <= chunk.num_frames <= self.max_chunk_frames:
            raise _invalid(f"chunk num_frames must be in [1, {self.max_chunk_frames}]")
        if chunk.first_frame_index != self.next_frame:
            raise _invalid(f"chunk starts at frame {chunk.first_frame_index}, expected {self.next_frame}")
        try:
            codes = unpack_codes(chunk.codes, chunk.num_frames, NUM_CODEBOOKS, self.codebook_size)
        except PackingError as e:
            raise _invalid(f"chunk at frame {self.next_frame}: {e}") from None
        self.next_frame += chunk.num_frames
        self.ended = chunk.last
        return codes


STARTED = object()  # queued for a DecodeMany stream when it is admitted
MANY_RESPONSE_BYTES = 1 << 20  # PCM per DecodeManyResponse before the rest of a step's audio goes in the next one


@dataclass(eq=False)
class _DecodeEntry(ManyStream):
    """A stream of a DecodeMany call: its chunk rules and its engine stream (None until admitted)."""

    check: ChunkCheck | None = None
    stream: Stream | None = None


class CodecServicer(codec_pb2_grpc.CodecServiceServicer):
    def __init__(self, engine: CodecEngine, identity: common_pb2.ModelIdentity, config: CodecConfig) -> None:
        self.engine = engine
        self.identity = identity
        self.config = config
        self.codebook_size = engine.decoder.cfg.codebook_size
        self.many_calls = ManyCalls()  # open DecodeMany calls, told when shutdown begins

    async def Decode(self, request_iterator, context):
        start = time.perf_counter()
        request_id, outcome, stream, reader, error = "", "error", None, None, ""
        try:
            first = await self._first_message(request_iterator)
            if first.WhichOneof("kind") != "open":
                raise _invalid("the first message must be `open`")
            stream, request_id = self._open(first.open), first.open.request_id
            yield codec_pb2.DecodeResponse(started=self._started())
            reader = asyncio.create_task(self._read_chunks(request_iterator, stream))
            while True:
                item = await stream.outputs.get()
                if isinstance(item, DecodeFailed):
                    raise RpcFailure(grpc.StatusCode.INTERNAL, str(item))
                if isinstance(item, Exception):
                    raise item
                if item is END_OF_STREAM:
                    break
                response = codec_pb2.DecodeResponse()
                _fill_audio(response.audio, item)
                yield response
                if item.last:
                    # The client half-closes after its last chunk; anything else it sends is an error.
                    failure = await reader
                    if failure is not None:
                        raise failure
                    break
            # Every chunk is out: the stream succeeded. Set before the last yield, because a client that has read
            # the summary may cancel the call (the gateway does) and the handler then never resumes after it.
            outcome = "ok"
            yield codec_pb2.DecodeResponse(summary=self._summary(stream, start))
        except RpcFailure as e:
            outcome, error = e.code.name.lower(), e.message  # the message in the log says why the stream ended
            await context.abort(e.code, e.message)
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            if reader is not None:
                reader.cancel()
            self._end(stream, request_id, outcome, start, error)

    async def DecodeMany(self, request_iterator, context):
        """Many streams over one call (see codec.proto and services/common/many_calls.py)."""
        stream_calls = serve_call(
            self.many_calls,
            request_iterator,
            self._many_item,
            self._many_event,
            partial(self._many_finish, outcome="cancelled"),
            codec_pb2.DecodeManyResponse,
            MANY_RESPONSE_BYTES,
            _broken,
        )
        try:
            async for response in stream_calls:
                yield response
        except RpcFailure as e:
            await context.abort(e.code, e.message)

    def _many_finish(self, call: ManyCall, entry: _DecodeEntry, outcome: str, error: str = "") -> None:
        call.forget(entry)
        self._end(entry.stream, entry.request_id, outcome, entry.start, error)

    def _many_fail(self, call: ManyCall, entry: _DecodeEntry, failure: RpcFailure) -> None:
        """End a DecodeMany stream with an `error` event (after any of its events already queued)."""
        call.events.put_nowait((entry, failure))
        self._many_finish(call, entry, failure.code.name.lower(), failure.message)

    def _many_item(self, call: ManyCall, item: codec_pb2.StreamRequest) -> None:
        """One client item: open, feed, end or cancel its stream. A bad item fails its stream only (an `error`
        event); a chunk past the stream's backlog fails it RESOURCE_EXHAUSTED."""
        kind, stream_id = item.WhichOneof("kind"), item.stream_id
        entry = call.streams.get(stream_id)
        if kind == "open":
            if entry is not None:
                self._many_fail(call, entry, _invalid(f"stream {stream_id} is already open"))
                return
            entry = _DecodeEntry(stream_id, item.open.request_id, check=ChunkCheck(self.config, self.codebook_size))
            try:
                entry.stream = self._open(item.open, Tagged(call.events, entry))
            except RpcFailure as failure:
                self._many_fail(call, entry, failure)  # refused: never in `streams`
                return
            call.streams[stream_id] = entry
            call.events.put_nowait((entry, STARTED))
            return
        if entry is None:
            if kind != "cancel":  # a cancel may cross the stream's end on the wire
                orphan = _DecodeEntry(stream_id)
                call.events.put_nowait((orphan, _invalid(f"stream {stream_id} is not open (open it first)")))
            return
        if kind == "cancel":
            self._many_finish(call, entry, "cancelled")
        elif kind == "end":
            if not entry.check.ended:
                entry.check.ended = True
                self.engine.submit(entry.stream, None, False)
        elif kind == "chunk":
            try:
                codes = entry.check.codes(item.chunk)
            except RpcFailure as failure:
                self._many_fail(call, entry, failure)
                return
            self.engine.submit(entry.stream, codes, item.chunk.last)
            if entry.stream.backlog_frames > self.config.max_backlog_frames:
                backlog, limit = entry.stream.backlog_frames, self.config.max_backlog_frames
                message = f"{backlog} undecoded frames > max_backlog_frames {limit}"
                self._many_fail(call, entry, RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED, message))
        else:
            self._many_fail(call, entry, _invalid(f"stream {stream_id}: a message with no content"))

    def _many_event(self, call: ManyCall, response: codec_pb2.DecodeManyResponse, entry: _DecodeEntry, item) -> int:
        """Add one queued item's event(s) to `response`; returns the bytes of PCM added."""
        if isinstance(item, RpcFailure):  # the stream was already ended where it failed
            event = response.events.add(stream_id=entry.stream_id)
            event.error.code, event.error.message = item.code.value[0], item.message
            return 0
        if entry.ended:  # audio decoded before the stream was cancelled or failed
            return 0
        if item is STARTED:
            response.events.add(stream_id=entry.stream_id).started.CopyFrom(self._started())
            return 0
        if isinstance(item, DecodeFailed):
            self._many_fail(call, entry, RpcFailure(grpc.StatusCode.INTERNAL, str(item)))
            return 0
        size = 0
        if isinstance(item, DecodedChunk):
            _fill_audio(response.events.add(stream_id=entry.stream_id).audio, item)
            size = len(item.pcm)
        if item is END_OF_STREAM or item.last:
            response.events.add(stream_id=entry.stream_id).summary.CopyFrom(self._summary(entry.stream, entry.start))
            self._many_finish(call, entry, "ok")
        return size

    async def _first_message(self, request_iterator) -> codec_pb2.DecodeRequest:
        try:
            return await request_iterator.__anext__()
        except StopAsyncIteration:
            raise _invalid("empty stream: the first message must be `open`") from None

    def _open(self, opening: codec_pb2.DecodeOpen, outputs: Outputs | None = None) -> Stream:
        mismatch = codec_mismatch(opening.model, self.identity)
        if mismatch:
            raise RpcFailure(grpc.StatusCode.FAILED_PRECONDITION, f"model mismatch: {mismatch}")
        if opening.ref_code_frames > self.config.max_ref_frames:
            raise _invalid(f"ref_code_frames {opening.ref_code_frames} > max_ref_frames {self.config.max_ref_frames}")
        try:
            sample_format = check_sample_format(opening.sample_format)
            ref = unpack_codes(opening.ref_codes, opening.ref_code_frames, NUM_CODEBOOKS, self.codebook_size)
        except PackingError as e:
            raise _invalid(f"open: {e}") from None
        try:
            return self.engine.open(sample_format, ref if len(ref) else None, outputs)
        except EngineFull as e:
            raise RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED, f"{e}; retry later") from None
        except EngineClosed as e:
            raise RpcFailure(grpc.StatusCode.UNAVAILABLE, str(e)) from None

    def _started(self) -> codec_pb2.DecodeStarted:
        return codec_pb2.DecodeStarted(
            model=self.identity,
            sample_rate=self.engine.sample_rate,
            samples_per_frame=self.engine.samples_per_frame,
            max_backlog_frames=self.config.max_backlog_frames,
        )

    def _summary(self, stream: Stream, start: float) -> codec_pb2.DecodeSummary:
        return codec_pb2.DecodeSummary(
            num_frames=stream.frames_done,
            num_samples=stream.samples_done,
            audio_seconds=stream.samples_done / self.engine.sample_rate,
            num_chunks=stream.chunks_done,
            total_ms=ms_since(start),
        )

    def _end(self, stream: Stream | None, request_id: str, outcome: str, start: float, error: str = "") -> None:
        """A stream ended (either RPC): free its slot, count it and log it."""
        if stream is not None:
            self.engine.release(stream)
        self.engine.metrics.streams.labels(outcome).inc()
        log_request(
            log,
            "decode",
            request_id=request_id,
            outcome=outcome,
            frames=stream.frames_done if stream else 0,
            chunks=stream.chunks_done if stream else 0,
            total_ms=ms_since(start),
            error=error,
        )

    async def _read_chunks(self, request_iterator, stream: Stream) -> RpcFailure | None:
        """Validate and submit the client's chunks; a failure is also queued to end the stream."""
        check = ChunkCheck(self.config, self.codebook_size)
        try:
            async for request in request_iterator:
                if request.WhichOneof("kind") != "chunk":
                    raise _invalid("only chunks may follow `open`")
                codes = check.codes(request.chunk)
                self.engine.submit(stream, codes, request.chunk.last)
                # Backpressure: stop reading (gRPC flow control then slows the client) while the backlog is full.
                while stream.backlog_frames > self.config.max_backlog_frames:
                    stream.decoded.clear()
                    await stream.decoded.wait()
            if not check.ended:
                self.engine.submit(stream, None, False)  # half-closed without `last`: end after what was sent
            return None
        except RpcFailure as failure:
            stream.outputs.put_nowait(failure)
            return failure

    async def GetLoad(self, request, context):
        engine = self.engine
        return codec_pb2.GetLoadResponse(
            load=common_pb2.Load(
                active_streams=len(engine.streams), capacity=engine.max_streams, accepting=engine.accepting
            )
        )

    async def GetModelInfo(self, request, context):
        return codec_pb2.GetModelInfoResponse(
            model=self.identity,
            sample_rate=self.engine.sample_rate,
            samples_per_frame=self.engine.samples_per_frame,
            num_codebooks=NUM_CODEBOOKS,
            codebook_size=self.codebook_size,
        )


def _fill_audio(audio: codec_pb2.AudioChunk, chunk: DecodedChunk) -> None:
    """Filled in place in its response: building an AudioChunk and copying it in would copy the PCM once more."""
    audio.pcm = chunk.pcm
    audio.num_samples = chunk.num_samples
    audio.first_sample_index = chunk.first_sample_index
    audio.first_frame_index = chunk.first_frame_index
    audio.num_frames = chunk.num_frames
    audio.last = chunk.last
    audio.timing.emitted_unix_nanos = time.time_ns()
    audio.timing.compute_ms = chunk.compute_ms
    audio.timing.queue_ms = chunk.queue_ms


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def build_codec_service(config: CodecConfig, metrics: CodecMetrics | None = None) -> tuple[GrpcService, CodecEngine]:
    """Load the decoder and wire engine, servicer and server (not started). Call from the event loop."""
    from omni.models.qwen3_tts.codec import SAMPLE_RATE, load_codec_decoder

    config.validate()
    if config.dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {config.dtype!r}")
    model_dir = Path(config.model)
    identity = model_identity(model_dir, config.revision)
    decoder = load_codec_decoder(model_dir, dtype=DTYPES[config.dtype], device=config.device)
    engine = engine_from_config(decoder, config, metrics, SAMPLE_RATE)  # CUDA graphs are captured here
    service = GrpcService("codec", f"{config.host}:{config.port}", grace_s=config.grace_s)
    servicer = CodecServicer(engine, identity, config)
    service.add(codec_pb2_grpc.add_CodecServiceServicer_to_server, servicer, SERVICE_NAME)

    async def stop_admitting() -> None:
        engine.accepting = False
        servicer.many_calls.drain()

    service.on_shutdown(stop_admitting)
    return service, engine


async def warm_up(engine: CodecEngine) -> None:
    """One real decode through the engine, so the first client does not pay for lazy initialisation."""
    stream = engine.open(common_pb2.SAMPLE_FORMAT_PCM_F32LE)
    try:
        engine.submit(stream, np.zeros((1, NUM_CODEBOOKS), dtype=np.int64), True)
        result = await stream.outputs.get()
        if not isinstance(result, DecodedChunk):
            raise RuntimeError(f"codec warm-up failed: {result}")
    finally:
        engine.release(stream)


async def serve(config: CodecConfig) -> None:
    """Run the codec service until SIGTERM/SIGINT."""
    set_switch_interval(config.switch_interval_ms)
    metrics = CodecMetrics()
    service, engine = build_codec_service(config, metrics)
    metrics_port = metrics.server.start(config.metrics_port)
    if metrics_port >= 0:
        log.info("codec metrics on port %d", metrics_port)
    engine.start()
    gc_pauses = GcPauses(metrics.gc_pause_ms)
    loop_lag = LoopLag(metrics.loop_lag_ms, unit_per_s=1000.0)

    async def warmup() -> None:
        await warm_up(engine)
        loop_lag.start()  # from now on: the warm-up's graph captures and compiles are not serving stalls
        frozen = gc_pauses.freeze_and_start()  # the decoder, graphs and modules stay out of later collections
        log.info(
            "codec ready: %d streams, model %s (%d objects frozen)", config.max_streams, engine.decoder.cfg, frozen
        )

    try:
        await service.run(warmup)
    finally:
        gc_pauses.stop()
        await loop_lag.stop()
        await engine.stop()
        metrics.server.stop()
