"""The reference-encoder gRPC service: Encode (cached, single-flight, batched), the voice registry RPCs,
GetModelInfo, and `serve`."""

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
import numpy as np
import torch
from omni.services.common.gc_pauses import GcPauses
from omni.services.common.identity import model_identity
from omni.services.common.logging import log_request, ms_since
from omni.services.common.metrics import MetricsServer
from omni.services.common.packing import pack_codes, pack_vector
from omni.services.common.server import GrpcService, set_switch_interval
from omni.services.refenc.cache import ReferenceCache, encoder_fingerprint, open_reference_cache
from omni.services.refenc.config import RefencConfig
from omni.services.refenc.engine import EncodeBatcher, ReferenceModel
from omni.services.refenc.redis_client import redis_client
from omni.services.refenc.registry import (
    RegistryError,
    RegistryFullError,
    RegistryUnavailableError,
    Voice,
    VoiceExistsError,
    VoiceNotFoundError,
    VoiceRegistry,
)

from omni.audio import MODEL_SAMPLE_RATE, AudioError, prepare_reference_audio
from omni.proto import common_pb2, refenc_pb2, refenc_pb2_grpc

log = logging.getLogger("omni.refenc")
SERVICE_NAME = refenc_pb2.DESCRIPTOR.services_by_name["ReferenceEncoderService"].full_name


class RpcFailure(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _status(e: Exception) -> tuple[grpc.StatusCode, str]:
    """The gRPC status of an exception raised while serving a request."""
    if isinstance(e, RpcFailure):
        return e.code, e.message
    if isinstance(e, AudioError | RegistryError):
        return grpc.StatusCode.INVALID_ARGUMENT, str(e)
    if isinstance(e, VoiceNotFoundError):
        return grpc.StatusCode.NOT_FOUND, str(e)
    if isinstance(e, VoiceExistsError):
        return grpc.StatusCode.ALREADY_EXISTS, str(e)
    if isinstance(e, RegistryFullError):
        return grpc.StatusCode.RESOURCE_EXHAUSTED, str(e)
    if isinstance(e, RegistryUnavailableError):
        return grpc.StatusCode.UNAVAILABLE, str(e)
    log.exception("internal error")
    return grpc.StatusCode.INTERNAL, f"internal error: {type(e).__name__}"


def _voice_proto(voice: Voice) -> refenc_pb2.Voice:
    return refenc_pb2.Voice(
        name=voice.name,
        ref_text=voice.ref_text,
        consent_id=voice.consent_id,
        description=voice.description,
        duration_s=voice.duration_s,
        created_unix_ms=voice.created_unix_ms,
        audio_sha256=voice.audio_sha256,
    )


@dataclass
class RefencParts:
    cache: ReferenceCache
    registry: VoiceRegistry | None
    batcher: EncodeBatcher
    identity: common_pb2.ModelIdentity
    has_xvector: bool


class ReferenceEncoderServicer(refenc_pb2_grpc.ReferenceEncoderServiceServicer):
    def __init__(self, parts: RefencParts) -> None:
        self.parts = parts

    def _registry(self) -> VoiceRegistry:
        if self.parts.registry is None:
            raise RpcFailure(grpc.StatusCode.FAILED_PRECONDITION, "the voice registry needs a Redis URL (--redis-url)")
        return self.parts.registry

    async def _handle(self, context, event: str, fields: dict, work):
        """Run `work()`, map its exception to a status, and log one line for the request."""
        start = time.perf_counter()
        outcome = "ok"
        try:
            return await work()
        except Exception as e:
            code, message = _status(e)
            outcome = code.name.lower()
            await context.abort(code, message)
        finally:
            log_request(log, event, outcome=outcome, total_ms=ms_since(start), **fields)

    async def Encode(self, request, context):
        fields = {"request_id": request.request_id}

        async def work():
            source = request.WhichOneof("source")
            ref_text = ""
            if source == "audio":
                audio = request.audio
            elif source == "voice_name":
                registry = self._registry()
                voice = await registry.get(request.voice_name)
                audio, ref_text = await registry.get_audio(request.voice_name), voice.ref_text
            else:
                raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, "set `audio` or `voice_name`")
            if request.want_x_vector and not self.parts.has_xvector:
                raise RpcFailure(grpc.StatusCode.FAILED_PRECONDITION, "this model has no speaker encoder (x-vector)")
            pcm = await asyncio.to_thread(prepare_reference_audio, audio)
            result = await self.parts.cache.get_or_encode(pcm, self.parts.batcher.encode)
            fields.update(cache_hit=result.hit, frames=result.encoding.codes.shape[0], source=source)
            xvector = result.encoding.xvector if request.want_x_vector else None
            return refenc_pb2.EncodeResponse(
                ref_codes=pack_codes(result.encoding.codes),
                ref_code_frames=result.encoding.codes.shape[0],
                x_vector=b"" if xvector is None else pack_vector(xvector),
                x_vector_dim=0 if xvector is None else xvector.shape[0],
                duration_s=len(pcm) / MODEL_SAMPLE_RATE,
                cache_hit=result.hit,
                cache_key=result.key,
                ref_text=ref_text,
            )

        return await self._handle(context, "refenc.encode", fields, work)

    async def RegisterVoice(self, request, context):
        fields = {"voice": request.name}

        async def work():
            voice, pcm = await self._registry().register(
                request.name, request.audio, request.consent_id, request.ref_text, request.description
            )
            # Encode now, so the first synthesis with the voice is a cache hit. The voice is stored either
            # way; a failed encode is retried on its first use.
            try:
                await self.parts.cache.get_or_encode(pcm, self.parts.batcher.encode)
            except Exception:
                log.exception("voice %s registered but not encoded", voice.name)
            return refenc_pb2.RegisterVoiceResponse(voice=_voice_proto(voice))

        return await self._handle(context, "refenc.register_voice", fields, work)

    async def ListVoices(self, request, context):
        async def work():
            voices = await self._registry().list_voices()
            return refenc_pb2.ListVoicesResponse(voices=[_voice_proto(v) for v in voices])

        return await self._handle(context, "refenc.list_voices", {}, work)

    async def GetVoice(self, request, context):
        async def work():
            registry = self._registry()
            voice = await registry.get(request.name)
            audio = await registry.get_audio(request.name) if request.include_audio else b""
            return refenc_pb2.GetVoiceResponse(voice=_voice_proto(voice), audio=audio)

        return await self._handle(context, "refenc.get_voice", {"voice": request.name}, work)

    async def DeleteVoice(self, request, context):
        async def work():
            await self._registry().delete(request.name)
            return refenc_pb2.DeleteVoiceResponse(name=request.name)

        return await self._handle(context, "refenc.delete_voice", {"voice": request.name}, work)

    async def GetModelInfo(self, request, context):
        return refenc_pb2.GetModelInfoResponse(
            model=self.parts.identity,
            encoder_fingerprint=self.parts.cache.fingerprint,
            sample_rate=MODEL_SAMPLE_RATE,
        )


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def build_refenc_service(config: RefencConfig, metrics: MetricsServer) -> tuple[GrpcService, RefencParts]:
    """Load the models and wire cache, registry, batcher, servicer and server (not started)."""
    config.validate()
    if config.dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {config.dtype!r}")
    model_dir = Path(config.model)
    identity = model_identity(model_dir, config.revision)
    model = ReferenceModel.load(model_dir, DTYPES[config.dtype], config.device)
    has_xvector = model.speaker_encoder is not None
    revision = f"{identity.codec_id}|{identity.checkpoint_fingerprint}|{config.dtype}"
    fingerprint = encoder_fingerprint(revision, model.num_quantizers, has_xvector)
    if config.redis_url:
        options = dict(ttl_s=config.cache_ttl_s, lock_ttl_s=config.lock_ttl_s)
        registry = VoiceRegistry(redis_client(config.redis_url), max_voices=config.max_voices, metrics=metrics)
    else:
        options = dict(max_entries=config.local_cache_entries)
        registry = None
        log.warning("no --redis-url: in-process cache only, and the voice registry is disabled")
    cache = open_reference_cache(config.redis_url or None, fingerprint, metrics=metrics, **options)
    batcher = EncodeBatcher(model, config.max_batch, config.max_wait_ms, metrics)
    parts = RefencParts(cache, registry, batcher, identity, has_xvector)
    service = GrpcService("refenc", f"{config.host}:{config.port}", grace_s=config.grace_s)
    service.add(
        refenc_pb2_grpc.add_ReferenceEncoderServiceServicer_to_server, ReferenceEncoderServicer(parts), SERVICE_NAME
    )
    return service, parts


async def warm_up(parts: RefencParts) -> None:
    """One real encode (1 s of a tone) so the first client does not pay for lazy initialisation."""
    t = np.arange(MODEL_SAMPLE_RATE, dtype=np.float32) / MODEL_SAMPLE_RATE
    await parts.batcher.encode((0.1 * np.sin(2 * np.pi * 220 * t)).astype(np.float32))
    if parts.registry is not None:
        log.info("voice registry: %d voices", await parts.registry.count())
        for problem in await parts.registry.check_durability():
            log.warning("voice registry durability: %s", problem)


async def serve(config: RefencConfig) -> None:
    """Run the reference-encoder service until SIGTERM/SIGINT."""
    set_switch_interval(config.switch_interval_ms)
    metrics = MetricsServer("omni_refenc")
    service, parts = build_refenc_service(config, metrics)
    metrics_port = metrics.start(config.metrics_port)
    if metrics_port >= 0:
        log.info("refenc metrics on port %d", metrics_port)
    parts.batcher.start()
    gc_pauses = GcPauses(metrics.gc_pauses())

    async def warmup() -> None:
        await warm_up(parts)
        frozen = gc_pauses.freeze_and_start()  # the encoders and modules stay out of later collections
        registry = "on" if parts.registry else "off"
        log.info("refenc ready: cache %s, registry %s (%d objects frozen)", parts.cache.backend, registry, frozen)

    try:
        await service.run(warmup)
    finally:
        gc_pauses.stop()
        await parts.batcher.stop()
        await parts.cache.close()
        if parts.registry is not None:
            await parts.registry.client.aclose()
        metrics.stop()
