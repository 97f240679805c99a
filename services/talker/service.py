"""The talker gRPC service: Generate (server stream) and GenerateMany (many generations over one bidi call) over the
engine, GetLoad, GetModelInfo, and `serve`."""

import logging
import time
import uuid
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import grpc
import torch
from omni.services.common.config import capture_buckets
from omni.services.common.gc_pauses import GcPauses
from omni.services.common.identity import codec_mismatch, model_identity
from omni.services.common.logging import log_request, ms_since
from omni.services.common.loop_lag import LoopLag
from omni.services.common.many_calls import ManyCall, ManyCalls, ManyStream, Tagged, serve_call
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

from omni.device_memory import GIB, NotEnoughMemory, free_bytes
from omni.fp8 import FP8_DTYPE
from omni.models.qwen3_tts.talker import Qwen3TTSTalker
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
    ChunkLead,
    ChunkPlan,
    EngineClosed,
    Finished,
    FirstChunkSizing,
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


MANY_RESPONSE_BYTES = 1 << 20  # codes per GenerateManyResponse before the rest go in the next one


@dataclass(eq=False)
class _GenerateEntry(ManyStream):
    """A stream of a GenerateMany call: its engine request (None until admitted)."""

    job: Request | None = None


def _broken(error: Exception) -> RpcFailure:
    return RpcFailure(grpc.StatusCode.INTERNAL, f"reading the call failed: {error}")


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
        self.many_calls = ManyCalls()  # open GenerateMany calls, told when shutdown begins

    async def Generate(self, request, context):
        start_wall, start = time.time(), time.perf_counter()  # wall first: a switch between makes it early, not late
        request_id = request.request_id or uuid.uuid4().hex
        outcome, job = "error", None
        try:
            remaining = context.time_remaining()
            deadline = time.monotonic() + remaining if remaining is not None else None
            job = self._submit(self._job(request, request_id, deadline))
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
                outcome = cancel_reason(context.time_remaining())
                self.engine.cancel(job, outcome)
            _log_generate(request_id, outcome, job, start, start_wall)

    async def GenerateMany(self, request_iterator, context):
        """Many generations over one call (see talker.proto and services/common/many_calls.py)."""
        stream_calls = serve_call(
            self.many_calls,
            request_iterator,
            self._many_item,
            self._many_event,
            partial(self._many_end, outcome=CANCELLED),
            talker_pb2.GenerateManyResponse,
            MANY_RESPONSE_BYTES,
            _broken,
        )
        try:
            async for response in stream_calls:
                yield response
        except RpcFailure as e:
            await context.abort(e.code, e.message)

    def _many_item(self, call: ManyCall, item: talker_pb2.GenerateItem) -> None:
        """One client item: start or cancel its stream. A refused or bad item fails its stream only (an `error`)."""
        kind, stream_id = item.WhichOneof("kind"), item.stream_id
        entry = call.streams.get(stream_id)
        if kind == "start":
            if entry is not None:
                self._many_fail(
                    call, entry, RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"stream {stream_id} is already started")
                )
                return
            request_id = item.start.request_id or uuid.uuid4().hex
            entry = _GenerateEntry(stream_id, request_id)
            try:
                job = self._job(item.start, request_id, None, Tagged(call.events, entry))
                entry.job = self._submit(job)
            except RpcFailure as failure:
                self.engine.metrics.outcomes.labels(failure.code.name.lower()).inc()  # refused before the engine
                self._many_fail(call, entry, failure)
                return
            call.streams[stream_id] = entry
        elif entry is None:
            if kind != "cancel":  # a cancel may cross the stream's end on the wire
                orphan = RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"stream {stream_id} is not started")
                call.events.put_nowait((_GenerateEntry(stream_id), orphan))
        elif kind == "cancel":
            self._many_end(call, entry, CANCELLED)
        else:
            failure = RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"stream {stream_id}: a message with no content")
            self._many_fail(call, entry, failure)

    def _many_event(
        self, call: ManyCall, response: talker_pb2.GenerateManyResponse, entry: _GenerateEntry, item
    ) -> int:
        """Add one queued item's event to `response`; returns the bytes of codes added."""
        if isinstance(item, RpcFailure):  # the stream was already ended where it failed
            event = response.events.add(stream_id=entry.stream_id)
            event.error.code, event.error.message = item.code.value[0], item.message
            event.error.retry_after_ms = int(dict(item.metadata).get("retry-after-ms", 0))
            return 0
        if entry.ended:  # output of a stream cancelled meanwhile
            return 0
        if isinstance(item, Chunk):
            chunk = response.events.add(stream_id=entry.stream_id).chunk
            chunk.CopyFrom(_chunk_message(item, entry.job))
            return len(chunk.codes)
        if isinstance(item, Exception):
            self._many_fail(call, entry, RpcFailure(grpc.StatusCode.INTERNAL, str(item)))
            return 0
        response.events.add(stream_id=entry.stream_id).summary.CopyFrom(_summary_message(item))
        self._many_end(call, entry, item.reason)
        return 0

    def _many_fail(self, call: ManyCall, entry: _GenerateEntry, failure: RpcFailure) -> None:
        """End a GenerateMany stream with an `error` event (after its events already queued)."""
        call.events.put_nowait((entry, failure))
        self._many_end(call, entry, failure.code.name.lower())

    def _many_end(self, call: ManyCall, entry: _GenerateEntry, outcome: str) -> None:
        """A GenerateMany stream ended: its request leaves the engine (if it has not) and is logged."""
        call.forget(entry)
        if entry.job is not None and not entry.job.done:
            self.engine.cancel(entry.job, CANCELLED)
        _log_generate(entry.request_id, outcome, entry.job, entry.start, entry.start_wall)

    def _job(self, request, request_id: str, deadline: float | None, outputs=None) -> Request:
        """Validate the request into an engine Request (RpcFailure on bad input); its outputs go to `outputs`
        (default: a queue of its own)."""
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
        job = Request(request_id, prompt, params, plan, deadline)
        if outputs is not None:
            job.outputs = outputs
        return job

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


# Our deadline for a call counts from when it reached us, the client's from when it sent it: the client's passes first
# and its cancel can reach us just before ours. A cancel this close to our deadline is the deadline.
DEADLINE_SLACK_S = 0.1


def cancel_reason(remaining_s: float | None) -> str:
    """Why a call that ended before its stream did was cancelled, from its deadline's time left (None: no deadline)."""
    return DEADLINE if remaining_s is not None and remaining_s <= DEADLINE_SLACK_S else CANCELLED


def _log_generate(request_id: str, outcome: str, job: Request | None, start: float, start_wall: float) -> None:
    """The request's line; `start` is its perf_counter start, `start_wall` the same moment on the wall clock."""
    log_request(
        log,
        "generate",
        request_id=request_id,
        outcome=outcome,
        start_ts=start_wall,
        prompt_tokens=len(job.prompt) if job else 0,
        frames=job.frames_sent if job else 0,
        chunks=job.chunks_sent if job else 0,
        queue_ms=job.queue_ms if job else 0.0,
        first_chunk_ms=job.first_chunk_ms if job else 0.0,
        total_ms=ms_since(start),
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


def stream_chunking(config: TalkerConfig) -> tuple[ChunkPlan, FirstChunkSizing, ChunkLead]:
    """How the service chunks a stream: the default plan (its first chunk's size, 0, left to the engine), the
    engine's sizing of that first chunk, and its floor on a listener's lead."""
    return (
        ChunkPlan(0, config.chunk_frames, tuple(config.chunk_ramp)),
        FirstChunkSizing(config.initial_chunk_frames, config.busy_initial_chunk_frames, config.busy_streams),
        ChunkLead(config.min_lead_ms, 1000.0 / FRAME_RATE),
    )


def apply_kernels(talker: Qwen3TTSTalker, config: TalkerConfig, on_cuda: bool) -> dict[str, bool]:
    """The configured Triton kernels: `talker` fused in place when `fused_kernels` (CUDA only), and the TalkerRunner
    kernel flags the talker's settings ask for on this device (also tools/census_talker_step.py's build)."""
    fused = config.fused_kernels and on_cuda
    if on_cuda:
        from omni.kernels.programmatic_launch import device_supports, set_programmatic_launch  # imports Triton

        supported = device_supports()
        if config.programmatic_launch and not supported:
            # info, not a warning: on by default, so every GPU before the H100 would warn
            log.info("programmatic_launch needs a GPU of compute capability 9.0 or more and a Triton with it: off")
        on = config.programmatic_launch and supported
        set_programmatic_launch(
            on, early_weights=on and config.programmatic_early_weights, max_rows=config.programmatic_launch_max_rows
        )
    if fused:
        from omni.models.qwen3_tts.talker_fused import (  # imports Triton: CUDA serving only
            fuse_talker_kernels,
            use_silu_down,
            use_skinny_linear,
        )

        fuse_talker_kernels(talker, add_norm=config.fused_add_norm)
        use_skinny_linear(talker, on=config.skinny_linear, dot=config.skinny_linear_dot,
                          by_shape=config.skinny_linear_by_shape, dot_32=config.skinny_linear_dot_32)  # fmt: skip
        use_silu_down(talker, on=config.skinny_linear and config.skinny_linear_silu_down,
                      max_rows=config.skinny_linear_silu_down_max_rows)  # fmt: skip
    return {
        "decode_kernel": fused,
        "sampler_kernel": config.sampler_kernel and on_cuda,
        "fused_draws": config.fused_draws and on_cuda,
        "short_pass_kernel": config.short_pass_kernel,
        "kv_write_kernel": config.kv_write_kernel and on_cuda,
        "norm_rope_write_kernel": config.norm_rope_write_kernel and fused,
        "norm_rope_attention_kernel": config.norm_rope_attention_kernel and config.norm_rope_write_kernel and fused,
        "projected_lookups": config.projected_lookups,
        "lookup_kernels": config.lookup_kernels and on_cuda,
        "step_input_kernel": config.step_input_kernel and on_cuda,
        "step_write_kernel": config.step_write_kernel and on_cuda,
        "step_rope_tables": config.step_rope_tables and config.step_input_kernel and fused,
    }


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
    default_plan, first_chunk, lead = stream_chunking(config)
    limits = RequestLimits(
        max_context=config.max_context,
        default_max_new_tokens=max_new,
        max_new_tokens=max_new,
        max_chunk_frames=config.max_chunk_frames,
        default_plan=default_plan,
    )
    on_cuda = torch.device(config.device).type == "cuda"
    use_graphs = config.cuda_graphs and on_cuda
    if on_cuda:
        attention = config.prefill_attention
        if attention == "auto":
            attention = "default" if use_graphs and config.prefill_graphs else "math"
        use_attention_backend(attention)
    kernels = apply_kernels(model.talker, config, on_cuda)
    try:
        runner = TalkerRunner(
            model.talker,
            model.config,
            config.max_streams,
            config.max_context,
            config.device,
            scratch_slot=use_graphs,
            kv_cache_dtype=FP8_DTYPE if config.kv_cache_dtype == "fp8" else None,
            **kernels,
        )
    except NotEnoughMemory as error:  # the settings that size it, in the message an operator reads
        fp8 = "" if config.kv_cache_dtype == "fp8" else ", or kv_cache_dtype fp8 (one byte a value)"
        remedy = f"lower max_streams ({config.max_streams}) or max_context ({config.max_context}){fp8}"
        raise NotEnoughMemory(f"{error}: {remedy}") from None
    cache = runner.cache
    free = free_bytes(config.device)
    log.info("talker K/V cache: %.2f GiB of %s (%d slots x %d positions), %s GiB left free on %s",
             (cache.k.nbytes + cache.v.nbytes) / GIB, str(cache.k.dtype).removeprefix("torch."), cache.num_slots,
             cache.max_len, "?" if free is None else f"{free / GIB:.2f}", config.device)  # fmt: skip
    graphs = None
    if use_graphs:
        graphs = TalkerGraphs(runner, capture_buckets(config.graph_batch_buckets, config.max_streams))
    prefill_graphs = None
    if use_graphs and config.prefill_graphs:
        prefill_graphs = PrefillGraphs(runner, config.prefill_batch_buckets, config.prefill_widths())
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
        config.decode_in_prefill_step,
        config.trace_steps,
        config.step_token_budget,
        first_chunk,
        lead,
        async_scheduling_max_streams=config.async_scheduling_max_streams,
    )
    parts = TalkerParts(engine, metrics, model, identity, limits)
    service = GrpcService("talker", f"{config.host}:{config.port}", grace_s=config.grace_s)
    servicer = TalkerServicer(parts)
    service.add(talker_pb2_grpc.add_TalkerServiceServicer_to_server, servicer, SERVICE_NAME)

    async def drain() -> None:
        # Stop admitting; in-flight streams get most of the grace period, then end with STOP_REASON_ABORTED.
        # GenerateMany calls end once their streams have.
        servicer.many_calls.drain()
        await engine.drain(config.grace_s * 0.8)

    service.on_shutdown(drain)
    return service, parts


# The warm-up's prompt lengths. A prompt's embedding (the text projection over all its positions, and those of the
# prompts admitted with it) runs eagerly, through the skinny GEMM kernels up to 32 rows, and Triton compiles one of
# those per padded row count (16, 32) and per whether the row count divides by 16: run 209's first requests (30 and 32
# positions) each compiled one on the GPU, ~250 ms of their first audio. These four reach every such kernel (8: past
# the row kernel's 4 rows on N <= 1024 weights, the 0.6B's second projection).
WARM_UP_PROMPT_LENGTHS = (8, 16, 24, 32)
WARM_UP_FRAMES = 3


async def warm_up(engine: TalkerEngine) -> None:
    """Short greedy requests through the engine, one for each length in WARM_UP_PROMPT_LENGTHS that fits a slot, so
    the first clients pay neither for lazy initialisation nor for a kernel compiled for their prompt's length."""
    config = engine.runner.config
    params = SamplingParams(do_sample=False, subtalker_dosample=False, max_new_tokens=WARM_UP_FRAMES).validate()
    for length in [n for n in WARM_UP_PROMPT_LENGTHS if engine.fits(n, WARM_UP_FRAMES)]:
        ids = torch.full((length,), config.tts_pad_token_id, dtype=torch.int64)
        codec = torch.full((length,), config.talker.codec_pad_id, dtype=torch.int64)
        prompt = TalkerPrompt(text_ids=ids, codec_ids=codec, trailing_ids=torch.zeros(0, dtype=torch.int64))
        job = engine.submit(Request(f"warm-up-{length}", prompt, params))
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
    gc_pauses = GcPauses(metrics.gc_pause_ms)
    loop_lag = LoopLag(metrics.loop_lag_ms, unit_per_s=1000.0)

    async def warmup() -> None:
        await warm_up(parts.engine)
        loop_lag.start()  # from now on: the warm-up's graph captures and compiles are not serving stalls
        frozen = gc_pauses.freeze_and_start()  # the model, graphs and modules stay out of later collections
        log.info(
            "talker ready: %d slots, context %d (%d objects frozen)", config.max_streams, config.max_context, frozen
        )

    try:
        await service.run(warmup)
    finally:
        gc_pauses.stop()
        await loop_lag.stop()
        await parts.engine.stop()
        metrics.server.stop()
