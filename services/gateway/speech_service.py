"""The gateway's public gRPC `SpeechService`: the twin of POST /v1/audio/speech over the same `Backend`.

A request is validated by the HTTP layer's own rules (`resolve.resolve_request`), so both APIs accept and refuse
the same things; failures map to gRPC status codes the way the HTTP layer maps them to HTTP statuses.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid

import grpc
from omni.services.common.packing import encode_pcm
from pydantic import ValidationError

from omni.proto import common_pb2, speech_pb2, speech_pb2_grpc

from .app import to_api_error
from .backend import Backend, BackendError, Usage
from .config import GatewayConfig
from .errors import APIError
from .resolve import resolve_request
from .schemas import SpeechRequest

SERVICE_NAME = speech_pb2.DESCRIPTOR.services_by_name["SpeechService"].full_name
STATUS_CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    404: grpc.StatusCode.NOT_FOUND,
    413: grpc.StatusCode.INVALID_ARGUMENT,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
    504: grpc.StatusCode.DEADLINE_EXCEEDED,
}
STOP_REASONS = {True: "max_new_tokens", False: "eos"}


def speech_request(request: speech_pb2.SynthesizeRequest) -> SpeechRequest:
    """The HTTP schema's form of a gRPC request (the same field checks apply)."""
    fields: dict = {"input": request.input, "model": request.model or None}
    for name in ("voice", "task_type", "language", "instructions", "ref_text"):
        if getattr(request, name):
            fields[name] = getattr(request, name)
    if request.ref_audio:
        fields["ref_audio"] = "data:application/octet-stream;base64," + base64.b64encode(request.ref_audio).decode()
    if request.x_vector_only_mode:
        fields["x_vector_only_mode"] = True
    if request.ignore_eos:
        fields["ignore_eos"] = True
    for name in ("max_new_tokens", "initial_codec_chunk_frames"):
        if request.HasField(name):
            fields[name] = getattr(request, name)
    if request.HasField("seed"):
        fields["seed"] = request.seed if request.seed < 2**63 else request.seed - 2**64  # the talker uses seed % 2**64
    return SpeechRequest.model_validate(fields)


class SpeechServicer(speech_pb2_grpc.SpeechServiceServicer):
    def __init__(self, backend: Backend, config: GatewayConfig) -> None:
        self.backend = backend
        self.config = config

    async def Synthesize(self, request, context):
        start = time.perf_counter()
        metadata = dict(context.invocation_metadata() or ())
        if not self.config.api_keys.check_header(metadata.get("authorization")):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "a valid API key is required (authorization: Bearer)")
        sample_format = request.sample_format or common_pb2.SAMPLE_FORMAT_PCM_S16LE
        if sample_format not in (common_pb2.SAMPLE_FORMAT_PCM_S16LE, common_pb2.SAMPLE_FORMAT_PCM_F32LE):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"sample_format: unknown value {sample_format}")
        request_id = request.request_id or uuid.uuid4().hex
        chunks = None
        try:
            try:
                body = speech_request(request)
            except ValidationError as e:
                error = e.errors()[0]
                where = ".".join(str(p) for p in error["loc"])
                raise APIError(400, f"{where}: {error['msg']}", where) from None
            needs_voices = body.voice not in (None, "", "default")
            uploaded = await self.backend.voices_for_request(body.voice) if needs_voices else []
            model, synthesis = await resolve_request(body, self.backend.models(), uploaded, self.config, request_id)
            synthesis.float_samples = sample_format == common_pb2.SAMPLE_FORMAT_PCM_F32LE
            chunks = self.backend.synthesize(synthesis)
            remaining = context.time_remaining()
            timeout = min(self.config.request_timeout_s, remaining if remaining is not None else float("inf"))
            async with asyncio.timeout(None if timeout == float("inf") else timeout):
                first_audio_ms, samples, usage = 0.0, 0, Usage()
                yield speech_pb2.SynthesizeResponse(
                    started=speech_pb2.SynthesisStarted(
                        request_id=request_id, sample_rate=model.sample_rate, sample_format=sample_format
                    )
                )
                async for item in chunks:
                    if isinstance(item, Usage):
                        usage = item
                        break
                    if not first_audio_ms:
                        first_audio_ms = (time.perf_counter() - start) * 1000
                    samples += len(item)
                    pcm = encode_pcm(item, sample_format)
                    yield speech_pb2.SynthesizeResponse(audio=speech_pb2.SynthesisAudio(pcm=pcm, num_samples=len(item)))
            # N frames take N + 1 draws, so a request that ran into its limit has max_new_tokens - 1 frames.
            limit = synthesis.max_new_tokens
            yield speech_pb2.SynthesizeResponse(
                summary=speech_pb2.SynthesisSummary(
                    audio_seconds=samples / model.sample_rate,
                    num_frames=usage.output_tokens,
                    input_tokens=usage.input_text_tokens,
                    time_to_first_audio_ms=first_audio_ms,
                    total_ms=(time.perf_counter() - start) * 1000,
                    stop_reason=STOP_REASONS[
                        synthesis.ignore_eos or (limit is not None and usage.output_tokens >= limit - 1)
                    ],
                )
            )
        except (APIError, BackendError, TimeoutError) as e:
            api = to_api_error(e, self.config.request_timeout_s)
            await context.abort(STATUS_CODES.get(api.status, grpc.StatusCode.INTERNAL), str(api))
        finally:
            if chunks is not None:
                await chunks.aclose()
