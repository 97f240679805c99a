"""The codec gRPC service: the Decode bidi stream over the engine, GetLoad, GetModelInfo, and `serve`."""

import asyncio
import logging
import time
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
    Stream,
    engine_from_config,
)
from omni.services.codec.metrics import CodecMetrics
from omni.services.common.identity import codec_mismatch, model_identity
from omni.services.common.logging import log_request, ms_since
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


class CodecServicer(codec_pb2_grpc.CodecServiceServicer):
    def __init__(self, engine: CodecEngine, identity: common_pb2.ModelIdentity, config: CodecConfig) -> None:
        self.engine = engine
        self.identity = identity
        self.config = config
        self.codebook_size = engine.decoder.cfg.codebook_size

    async def Decode(self, request_iterator, context):
        start = time.perf_counter()
        request_id, outcome, stream, reader, error = "", "error", None, None, ""
        try:
            stream, request_id = self._open(await self._first_message(request_iterator))
            yield codec_pb2.DecodeResponse(
                started=codec_pb2.DecodeStarted(
                    model=self.identity,
                    sample_rate=self.engine.sample_rate,
                    samples_per_frame=self.engine.samples_per_frame,
                )
            )
            reader = asyncio.create_task(self._read_chunks(request_iterator, stream))
            while True:
                item = await stream.outputs.get()
                if isinstance(item, DecodeFailed):
                    raise RpcFailure(grpc.StatusCode.INTERNAL, str(item))
                if isinstance(item, Exception):
                    raise item
                if item is END_OF_STREAM:
                    break
                yield _audio_response(item)
                if item.last:
                    # The client half-closes after its last chunk; anything else it sends is an error.
                    failure = await reader
                    if failure is not None:
                        raise failure
                    break
            # Every chunk is out: the stream succeeded. Set before the last yield, because a client that has read
            # the summary may cancel the call (the gateway does) and the handler then never resumes after it.
            outcome = "ok"
            yield codec_pb2.DecodeResponse(
                summary=codec_pb2.DecodeSummary(
                    num_frames=stream.frames_done,
                    num_samples=stream.samples_done,
                    audio_seconds=stream.samples_done / self.engine.sample_rate,
                    num_chunks=stream.chunks_done,
                    total_ms=ms_since(start),
                )
            )
        except RpcFailure as e:
            outcome, error = e.code.name.lower(), e.message  # the message in the log says why the stream ended
            await context.abort(e.code, e.message)
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            if reader is not None:
                reader.cancel()
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

    async def _first_message(self, request_iterator) -> codec_pb2.DecodeRequest:
        try:
            return await request_iterator.__anext__()
        except StopAsyncIteration:
            raise _invalid("empty stream: the first message must be `open`") from None

    def _open(self, request: codec_pb2.DecodeRequest) -> tuple[Stream, str]:
        if request.WhichOneof("kind") != "open":
            raise _invalid("the first message must be `open`")
        opening = request.open
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
            stream = self.engine.open(sample_format, ref if len(ref) else None)
        except EngineFull as e:
            raise RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED, f"{e}; retry later") from None
        except EngineClosed as e:
            raise RpcFailure(grpc.StatusCode.UNAVAILABLE, str(e)) from None
        return stream, opening.request_id

    async def _read_chunks(self, request_iterator, stream: Stream) -> RpcFailure | None:
        """Validate and submit the client's chunks; a failure is also queued to end the stream."""
        next_frame, ended = 0, False
        try:
            async for request in request_iterator:
                if request.WhichOneof("kind") != "chunk":
                    raise _invalid("only chunks may follow `open`")
                if ended:
                    raise _invalid("chunk after the last chunk")
                chunk = request.chunk
                if chunk.num_codebooks != NUM_CODEBOOKS:
                    raise _invalid(f"chunk has {chunk.num_codebooks} codebooks, the codec needs {NUM_CODEBOOKS}")
                if not 1 <= chunk.num_frames <= self.config.max_chunk_frames:
                    raise _invalid(f"chunk num_frames must be in [1, {self.config.max_chunk_frames}]")
                if chunk.first_frame_index != next_frame:
                    raise _invalid(f"chunk starts at frame {chunk.first_frame_index}, expected {next_frame}")
                try:
                    codes = unpack_codes(chunk.codes, chunk.num_frames, NUM_CODEBOOKS, self.codebook_size)
                except PackingError as e:
                    raise _invalid(f"chunk at frame {next_frame}: {e}") from None
                next_frame += chunk.num_frames
                ended = chunk.last
                self.engine.submit(stream, codes, chunk.last)
                # Backpressure: stop reading (gRPC flow control then slows the client) while the backlog is full.
                while stream.frames_submitted - stream.frames_done > self.config.max_backlog_frames:
                    stream.decoded.clear()
                    await stream.decoded.wait()
            if not ended:
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


def _audio_response(chunk: DecodedChunk) -> codec_pb2.DecodeResponse:
    """Filled in place: building an AudioChunk and passing it to DecodeResponse would copy the PCM once more."""
    response = codec_pb2.DecodeResponse()
    audio = response.audio
    audio.pcm = chunk.pcm
    audio.num_samples = chunk.num_samples
    audio.first_sample_index = chunk.first_sample_index
    audio.first_frame_index = chunk.first_frame_index
    audio.num_frames = chunk.num_frames
    audio.last = chunk.last
    audio.timing.emitted_unix_nanos = time.time_ns()
    audio.timing.compute_ms = chunk.compute_ms
    audio.timing.queue_ms = chunk.queue_ms
    return response


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

    async def warmup() -> None:
        await warm_up(engine)
        log.info("codec ready: %d streams, model %s", config.max_streams, engine.decoder.cfg)

    try:
        await service.run(warmup)
    finally:
        await engine.stop()
        metrics.server.stop()
