"""The talker gRPC service: Generate (server stream) over the engine, GetLoad, GetModelInfo, and `serve`."""

import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import grpc
import torch
from omni.services.common.config import capture_buckets
from omni.services.common.identity import codec_mismatch, model_identity
from omni.services.common.logging import log_request, ms_since
from omni.services.common.packing import pack_codes
from omni.services.common.server import GrpcService, set_switch_interval
from omni.services.talker.config import TalkerConfig
from omni.services.talker.metrics import TalkerMetrics
from omni.services.talker.requests import (
    InvalidRequest,
    RequestLimits,
    UnsupportedRequest,
    chunk_plan_from_proto,
    max_new_tokens_for,
    prompt_from_proto,
    sampling_from_proto,
)

from omni.proto import common_pb2, talker_pb2, talker_pb2_grpc
from omni.talker.attention_backend import use_attention_backend
from omni.talker.cuda_graphs import PrefillGraphs, TalkerGraphs
from omni.talker.engine import (
    ABORTED,
    CANCELLED,
    DEADLINE,
    EOS,
    MAX_NEW_TOKENS,
    Chunk,
    ChunkPlan,
    EngineClosed,
    Finished,
    PrefillCoalescing,
    QueueFull,
    Request,
    TalkerEngine,
)
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import TalkerPrompt
from omni.talker.sampling import SamplingParams

log = logging.getLogger("omni.talker")
SERVICE_NAME = talker_pb2.DESCRIPTOR.services_by_name["TalkerService"].full_name
FRAME_RATE = 12.5
STOP_REASONS = {
    EOS: talker_pb2.STOP_REASON_EOS,
    MAX_NEW_TOKENS: talker_pb2.STOP_REASON_MAX_NEW_TOKENS,
    ABORTED: talker_pb2.STOP_REASON_ABORTED,
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class RpcFailure(Exception):
    """Ends the call with a status code and message."""

    def __init__(self, code: grpc.StatusCode, message: str, metadata: tuple = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.metadata = metadata


@dataclass
class TalkerParts:
    """What build_talker_service wires together (tests and warm-up reach into it)."""

    engine: TalkerEngine
    metrics: TalkerMetrics
    model: object  # omni.models.qwen3_tts.loader.Qwen3TTSModel
    identity: common_pb2.ModelIdentity
    limits: RequestLimits


class TalkerServicer(talker_pb2_grpc.TalkerServiceServicer):
    def __init__(self, parts: TalkerParts) -> None:
        self.parts = parts
        self.engine = parts.engine
        self.config = parts.model.config
        self.generation = parts.model.generation

    async def Generate(self, request, context):
        start = time.perf_counter()
        request_id = request.request_id or uuid.uuid4().hex
        outcome, job = "error", None
        try:
            job = self._submit(self._job(request, request_id, context))
            while True:
                item = await job.outputs.get()
                if isinstance(item, Exception):
                    raise RpcFailure(grpc.StatusCode.INTERNAL, str(item))
                if isinstance(item, Chunk):
                    yield talker_pb2.GenerateResponse(chunk=_chunk_message(item, job))
                    continue
                outcome = item.reason
                if item.reason == DEADLINE:
                    raise RpcFailure(grpc.StatusCode.DEADLINE_EXCEEDED, "the request's deadline passed")
                yield talker_pb2.GenerateResponse(summary=_summary_message(item))
                break
        except RpcFailure as e:
            if outcome == "error":
                outcome = e.code.name.lower()
                if job is None:  # refused before reaching the engine
                    self.engine.metrics.outcomes.labels(outcome).inc()
            if e.metadata:
                context.set_trailing_metadata(e.metadata)
            await context.abort(e.code, e.message)
        finally:
            if job is not None and not job.done:
                remaining = context.time_remaining()
                outcome = DEADLINE if remaining is not None and remaining <= 0 else CANCELLED
                self.engine.cancel(job, outcome)
            log_request(
                log,
                "generate",
                request_id=request_id,
                outcome=outcome,
                prompt_tokens=len(job.prompt) if job else 0,
                frames=job.frames_sent if job else 0,
                chunks=job.chunks_sent if job else 0,
                queue_ms=job.queue_ms if job else 0.0,
                first_chunk_ms=job.first_chunk_ms if job else 0.0,
                total_ms=ms_since(start),
            )

    def _job(self, request, request_id: str, context) -> Request:
        """Validate the request into an engine Request (RpcFailure on bad input)."""
        limits = self.parts.limits
        if request.HasField("expected_model"):
            mismatch = model_mismatch(request.expected_model, self.parts.identity)
            if mismatch:
                raise RpcFailure(grpc.StatusCode.FAILED_PRECONDITION, f"model mismatch: {mismatch}")
        try:
            prompt = prompt_from_proto(request.prompt, self.config, limits.max_context)
            max_new_tokens = max_new_tokens_for(request, len(prompt), limits)
            params = sampling_from_proto(request, self.generation, max_new_tokens)
            plan = chunk_plan_from_proto(request.chunk_plan, limits)
        except InvalidRequest as e:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None
        except UnsupportedRequest as e:
            raise RpcFailure(grpc.StatusCode.UNIMPLEMENTED, str(e)) from None
        remaining = context.time_remaining()
        deadline = time.monotonic() + remaining if remaining is not None else None
        return Request(request_id, prompt, params, plan, deadline)

    def _submit(self, job: Request) -> Request:
        try:
            return self.engine.submit(job)
        except QueueFull as e:
            retry_ms = str(round(e.retry_after_s * 1000))
            raise RpcFailure(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{e}; retry after {e.retry_after_s:g} s",
                (("retry-after-ms", retry_ms),),
            ) from None
        except EngineClosed as e:
            raise RpcFailure(grpc.StatusCode.UNAVAILABLE, str(e)) from None
        except ValueError as e:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None

    async def GetLoad(self, request, context):
        engine = self.engine
        return talker_pb2.GetLoadResponse(
            load=common_pb2.Load(
                active_streams=len(engine.slots),
                capacity=engine.max_streams,
                queue_depth=len(engine.waiting),
                queue_capacity=engine.max_queue,
                accepting=engine.accepting,
            )
        )

    async def GetModelInfo(self, request, context):
        return talker_pb2.GetModelInfoResponse(
            model=self.parts.identity,
            model_type=self.config.tts_model_type,
            num_codebooks=self.config.talker.num_code_groups,
            frame_rate=FRAME_RATE,
            max_context=self.parts.limits.max_context,
            max_new_tokens=self.parts.limits.max_new_tokens,
        )


def model_mismatch(client: common_pb2.ModelIdentity, server: common_pb2.ModelIdentity) -> str | None:
    """Why a request built for `client`'s model must not run here: the codec check plus the checkpoint."""
    mismatch = codec_mismatch(client, server)
    if mismatch:
        return mismatch
    if client.checkpoint_fingerprint and client.checkpoint_fingerprint != server.checkpoint_fingerprint:
        return f"checkpoint {client.checkpoint_fingerprint!r} != {server.checkpoint_fingerprint!r}"
    return None


def _chunk_message(chunk: Chunk, job: Request) -> common_pb2.CodecChunk:
    return common_pb2.CodecChunk(
        codes=pack_codes(chunk.codes, chunk.codes.shape[1]),
        num_frames=len(chunk.codes),
        num_codebooks=chunk.codes.shape[1],
        first_frame_index=chunk.first_frame,
        first=chunk.first_frame == 0,
        last=chunk.last,
        timing=common_pb2.ChunkTiming(
            emitted_unix_nanos=time.time_ns(), compute_ms=chunk.compute_ms, queue_ms=job.queue_ms
        ),
    )


def _summary_message(finished: Finished) -> talker_pb2.GenerateSummary:
    return talker_pb2.GenerateSummary(
        num_frames=finished.num_frames,
        num_chunks=finished.num_chunks,
        prompt_tokens=finished.prompt_tokens,
        stop_reason=STOP_REASONS[finished.reason],
        queue_ms=finished.queue_ms,
        time_to_first_chunk_ms=finished.first_chunk_ms,
        total_ms=finished.total_ms,
    )


def build_talker_service(config: TalkerConfig, metrics: TalkerMetrics | None = None) -> tuple[GrpcService, TalkerParts]:
    """Load the model and wire runner, engine, servicer and server (not started). Call from the event loop."""
    from omni.models.qwen3_tts.loader import load_qwen3_tts

    config.validate()
    if config.dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {config.dtype!r}")
    metrics = metrics or TalkerMetrics()
    model_dir = Path(config.model)
    identity = model_identity(model_dir, config.revision)
    model = load_qwen3_tts(model_dir, dtype=DTYPES[config.dtype], device=config.device)
    max_new = min(config.max_new_tokens or model.generation.max_new_tokens, config.max_context - 1)
    limits = RequestLimits(
        max_context=config.max_context,
        default_max_new_tokens=max_new,
        max_new_tokens=max_new,
        max_chunk_frames=config.max_chunk_frames,
        default_plan=ChunkPlan(config.initial_chunk_frames, config.chunk_frames, tuple(config.chunk_ramp)),
    )
    on_cuda = torch.device(config.device).type == "cuda"
    use_graphs, fused = config.cuda_graphs and on_cuda, config.fused_kernels and on_cuda
    if on_cuda:
        attention = config.prefill_attention
        if attention == "auto":
            attention = "default" if use_graphs and config.prefill_graphs else "math"
        use_attention_backend(attention)
    if fused:
        from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels  # imports Triton: CUDA serving only

        fuse_talker_kernels(model.talker)
    runner = TalkerRunner(
        model.talker,
        model.config,
        config.max_streams,
        config.max_context,
        config.device,
        scratch_slot=use_graphs,
        decode_kernel=fused,
        sampler_kernel=config.sampler_kernel and on_cuda,
    )
    graphs = None
    if use_graphs:
        graphs = TalkerGraphs(runner, capture_buckets(config.graph_batch_buckets, config.max_streams))
    prefill_graphs = None
    if use_graphs and config.prefill_graphs:
        # Width buckets up to the prefill budget: no prompt chunk is wider, so none falls back to eager.
        widths = capture_buckets([32, 64, 128, 256, 512], config.prefill_budget)
        prefill_graphs = PrefillGraphs(runner, width_buckets=widths)
    engine = TalkerEngine(
        runner,
        config.max_queue,
        config.prefill_budget,
        config.retry_after_s,
        metrics,
        graphs,
        PrefillCoalescing(config.prefill_min_batch, config.prefill_max_wait_ms),
        prefill_graphs,
        config.async_scheduling,
    )
    parts = TalkerParts(engine, metrics, model, identity, limits)
    service = GrpcService("talker", f"{config.host}:{config.port}", grace_s=config.grace_s)
    service.add(talker_pb2_grpc.add_TalkerServiceServicer_to_server, TalkerServicer(parts), SERVICE_NAME)

    async def drain() -> None:
        # Stop admitting; in-flight streams get most of the grace period, then end with STOP_REASON_ABORTED.
        await engine.drain(config.grace_s * 0.8)

    service.on_shutdown(drain)
    return service, parts


async def warm_up(engine: TalkerEngine) -> None:
    """One short greedy request through the engine, so the first client does not pay for lazy initialisation."""
    config = engine.runner.config
    ids = torch.full((4,), config.tts_pad_token_id, dtype=torch.int64)
    codec = torch.full((4,), config.talker.codec_pad_id, dtype=torch.int64)
    prompt = TalkerPrompt(text_ids=ids, codec_ids=codec, trailing_ids=torch.zeros(0, dtype=torch.int64))
    params = SamplingParams(do_sample=False, subtalker_dosample=False, max_new_tokens=3).validate()
    job = engine.submit(Request("warm-up", prompt, params))
    while not isinstance(item := await job.outputs.get(), Finished):
        if isinstance(item, Exception):
            raise RuntimeError(f"talker warm-up failed: {item}")


async def serve(config: TalkerConfig) -> None:
    """Run the talker service until SIGTERM/SIGINT."""
    set_switch_interval(config.switch_interval_ms)
    metrics = TalkerMetrics()
    service, parts = build_talker_service(config, metrics)
    metrics_port = metrics.server.start(config.metrics_port)
    if metrics_port >= 0:
        log.info("talker metrics on port %d", metrics_port)
    parts.engine.start()

    async def warmup() -> None:
        await warm_up(parts.engine)
        log.info("talker ready: %d slots, context %d", config.max_streams, config.max_context)

    try:
        await service.run(warmup)
    finally:
        await parts.engine.stop()
        metrics.server.stop()
