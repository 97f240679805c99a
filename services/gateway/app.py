"""The gateway's HTTP API: an OpenAI-compatible `POST /v1/audio/speech` (whole file, raw chunked stream, SSE), the
voice registry, models, probes and metrics, over any `Backend`.

`create_app(backend, config)` builds the FastAPI app; `omni gateway` serves it with uvicorn.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import Annotated

import numpy as np
import soxr
from fastapi import Depends, FastAPI, File, Form, Request, UploadFile
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response, StreamingResponse
from omni.services.common.logging import log_request
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import sse
from .audio_encoding import MEDIA_TYPES, StreamEncoder, encode_audio
from .backend import (
    Backend,
    BackendError,
    InvalidRequest,
    NotFound,
    Overloaded,
    Unavailable,
    Usage,
    VoiceInfo,
    VoiceUpload,
)
from .config import GatewayConfig
from .errors import APIError, error_body, error_response, install_error_handlers
from .metrics import GatewayMetrics, StreamClock
from .ref_audio import check_audio
from .resolve import pick_model, resolve_request
from .schemas import (
    ErrorResponse,
    HealthStatus,
    ModelCard,
    ModelList,
    SpeechRequest,
    UploadedVoice,
    VoiceCreated,
    VoiceDeleted,
    VoiceList,
)
from .tempo import change_tempo

log = logging.getLogger("omni.gateway")

KNOWN_PATHS = {"/v1/audio/speech", "/v1/audio/voices", "/v1/models", "/live", "/ready", "/health", "/metrics"}
PUBLIC_PATHS = ("/live", "/ready", "/health", "/metrics", "/docs", "/openapi.json")
VOICE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
VOICE_MIME_TYPES = {  # what libsndfile decodes; the content itself is checked too
    "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave", "audio/mpeg", "audio/mp3", "audio/ogg",
    "audio/flac", "audio/x-flac", "application/octet-stream",
}  # fmt: skip
USAGE_HEADERS = (  # vLLM-Omni's names, so existing clients keep reading them
    ("X-VLLM-OMNI-INPUT-TOKENS", lambda u: u.input_tokens),
    ("X-VLLM-OMNI-OUTPUT-TOKENS", lambda u: u.output_tokens),
    ("X-VLLM-OMNI-TOTAL-TOKENS", lambda u: u.total_tokens),
    ("X-VLLM-OMNI-INPUT-TEXT-TOKENS", lambda u: u.input_text_tokens),
    ("X-VLLM-OMNI-INPUT-AUDIO-TOKENS", lambda u: u.input_audio_tokens),
)
ERROR_RESPONSES = {
    status: {"model": ErrorResponse, "description": desc}
    for status, desc in (
        (400, "Invalid request"),
        (401, "Missing or invalid API key"),
        (404, "Unknown model or voice"),
        (413, "Request body too large"),
        (415, "Wrong content type"),
        (429, "All backends at capacity; see Retry-After"),
        (500, "Synthesis failed"),
        (503, "Not ready"),
        (504, "Request deadline exceeded"),
    )
}


class BodyTooLarge(StarletteHTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body is larger than {limit} bytes")


class RequestGuard:
    """ASGI middleware: API keys on every non-probe path (before the body is read), and the body size limit
    (declared Content-Length up front, and counted while the body streams in)."""

    def __init__(self, app: ASGIApp, config: GatewayConfig, metrics: GatewayMetrics) -> None:
        self.app = app
        self.config = config
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"] if scope["path"] in KNOWN_PATHS else "other"  # bounded label values

        async def counting_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.metrics.responses.labels(path, str(message["status"])).inc()
            await send(message)

        await self._guarded(scope, receive, counting_send)

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not scope["path"].startswith(PUBLIC_PATHS) and not self.config.api_keys.check_header(
            headers.get("authorization")
        ):
            response = error_response(401, "invalid or missing API key", headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        limit = self.config.max_body_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await error_response(413, f"request body is larger than {limit} bytes")(scope, receive, send)
            return
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, counting_receive, send)


class AudioStreamResponse(StreamingResponse):
    """A streaming response that stops as soon as the client disconnects and always closes its body iterator,
    so the backend streams behind it are cancelled at once (not when the next chunk fails to send)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        stream_task = asyncio.ensure_future(self.stream_response(send))
        disconnect_task = asyncio.ensure_future(self.listen_for_disconnect(receive))
        try:
            await asyncio.wait({stream_task, disconnect_task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (stream_task, disconnect_task):
                task.cancel()
            await asyncio.gather(stream_task, disconnect_task, return_exceptions=True)
            await self.body_iterator.aclose()  # type: ignore[attr-defined]
        if stream_task.done() and not stream_task.cancelled() and stream_task.exception() is not None:
            raise stream_task.exception()  # type: ignore[misc]  # a truncated stream: let the server abort it


async def wait_for_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def to_api_error(exc: BaseException, timeout_s: float) -> APIError:
    """The status and message a backend failure is answered with."""
    if isinstance(exc, APIError):
        return exc
    if isinstance(exc, InvalidRequest):
        return APIError(400, str(exc), exc.param)
    if isinstance(exc, Overloaded):
        return APIError(429, str(exc), headers={"Retry-After": str(max(1, math.ceil(exc.retry_after)))})
    if isinstance(exc, Unavailable):
        return APIError(503, str(exc))
    if isinstance(exc, NotFound):
        return APIError(404, str(exc))
    if isinstance(exc, TimeoutError):
        return APIError(504, f"request deadline of {timeout_s:g} s exceeded")
    return APIError(500, f"speech generation failed: {exc}")


def outcome_of(status: int) -> str:
    if status == 429:
        return "rejected"
    if status == 504:
        return "timeout"
    return "client_error" if status < 500 else "error"


class Tracker:
    """One speech request's bookkeeping: in-flight gauge, outcome counter, audio metrics when it succeeds, and
    its one structured log line. `finish` counts once."""

    def __init__(self, metrics: GatewayMetrics, request_id: str) -> None:
        self.metrics, self.request_id, self.done = metrics, request_id, False
        self.clock = StreamClock()
        self.model, self.stream = "", "none"
        self.marks: dict[str, float] = {}  # the backend's marks on the request's way (SynthesisRequest.marks)
        metrics.in_flight.inc()

    def finish(self, outcome: str, reason: str = "") -> None:
        if self.done:
            return
        self.done = True
        self.metrics.in_flight.dec()
        self.metrics.requests.labels("speech", outcome).inc()
        if outcome == "ok":
            self.clock.record(self.metrics, self.model, self.stream)
        first = self.clock.first_audio

        def since_start(mark: str) -> float | None:  # ms from the handler's start to a mark on the request's way
            at = self.marks.get(mark)
            return (at - self.clock.start) * 1000.0 if at is not None else None

        log_request(
            log,
            "speech",
            request_id=self.request_id,
            model=self.model,
            stream=self.stream,
            outcome=outcome,
            reason=reason,
            # The handler's start on the wall clock, read with the monotonic start: the line's `ts` less `total_ms`
            # would be late by however long the process took from `total_ms` to the line (a thread switch, a GC).
            start_ts=self.clock.start_wall,
            ttfa_ms=(first - self.clock.start) * 1000.0 if first is not None else None,
            # The gateway's part of the way to the talker: the voice list read, the request prepared (its prompt
            # built), its talker request taken for a write.
            voices_ms=since_start("voices"),
            prepared_ms=since_start("prepared"),
            talker_sent_ms=since_start("talker_sent"),
            total_ms=(time.monotonic() - self.clock.start) * 1000.0,
            audio_s=self.clock.audio_s,
            underrun_ms=self.clock.underrun_s * 1000.0,
        )


class SynthesisRun:
    """Drives one backend iterator: the request deadline on every step, resampling to the output rate, timing.
    `next_chunk()` returns float32 chunks at the output rate, then None once the backend has sent its usage."""

    def __init__(
        self,
        chunks: AsyncIterator[np.ndarray | Usage],
        deadline: float,
        in_rate: int,
        out_rate: int,
        clock: StreamClock,
    ) -> None:
        self._chunks = chunks
        self._deadline = deadline
        self._resampler = soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32") if in_rate != out_rate else None
        self.out_rate = out_rate
        self.clock = clock
        self.usage: Usage | None = None

    async def next_chunk(self) -> np.ndarray | None:
        while self.usage is None:
            try:
                async with asyncio.timeout_at(self._deadline):
                    item = await anext(self._chunks)
            except StopAsyncIteration:
                raise BackendError("backend stream ended without usage") from None
            if isinstance(item, Usage):
                self.usage = item
                if self._resampler is None:
                    return None
                chunk = self._resampler.resample_chunk(np.zeros(0, np.float32), last=True)
            else:
                chunk = np.asarray(item, dtype=np.float32).reshape(-1)
                if self._resampler is not None:
                    chunk = self._resampler.resample_chunk(chunk)
            if chunk.size:
                self.clock.chunk(chunk.size / self.out_rate)
                return chunk
        return None

    async def close(self) -> None:
        await self._chunks.aclose()  # type: ignore[attr-defined]


def create_app(backend: Backend, config: GatewayConfig | None = None) -> FastAPI:
    config = config or GatewayConfig()
    metrics = GatewayMetrics()
    app = FastAPI(title="omni gateway", version="0.1.0", description="OpenAI-compatible streaming text-to-speech.")
    app.state.backend, app.state.config, app.state.metrics = backend, config, metrics
    backend.watch_writes(lambda service, seconds: metrics.backend_write.labels(service).observe(seconds))
    install_error_handlers(app)
    app.add_middleware(RequestGuard, config=config, metrics=metrics)

    def require_json(request: Request) -> None:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json" and not content_type.endswith("+json"):
            raise APIError(415, f"content type must be application/json, not {content_type or 'missing'!r}")

    def require_multipart(request: Request) -> None:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "multipart/form-data":
            raise APIError(415, f"content type must be multipart/form-data, not {content_type or 'missing'!r}")

    @app.post(
        "/v1/audio/speech",
        dependencies=[Depends(require_json)],
        response_class=Response,
        responses={
            200: {
                "description": "Audio: a whole file, a raw chunked stream (stream_format=audio) or SSE events.",
                "content": {**{mt: {} for mt in MEDIA_TYPES.values()}, sse.MEDIA_TYPE: {}},
            },
            **ERROR_RESPONSES,
        },
    )
    async def create_speech(body: SpeechRequest, request: Request) -> Response:
        request_id = uuid.uuid4().hex
        tracker = Tracker(metrics, request_id)
        clock = tracker.clock
        run: SynthesisRun | None = None
        try:
            needs_voices = body.voice not in (None, "", "default")
            uploaded = await backend.voices_for_request(body.voice) if needs_voices else []
            voices_at = time.monotonic()
            model, synthesis = await resolve_request(body, backend.models(), uploaded, config, request_id)
            synthesis.marks["voices"] = voices_at
            tracker.model, tracker.stream, tracker.marks = model.id, body.stream_mode, synthesis.marks
            deadline = asyncio.get_running_loop().time() + config.request_timeout_s - (time.monotonic() - clock.start)
            out_rate = body.sample_rate or model.sample_rate
            run = SynthesisRun(backend.synthesize(synthesis), deadline, model.sample_rate, out_rate, clock)
            if body.stream_mode == "none":
                return await _whole_file(request, body, run, tracker)
            first = await run.next_chunk()  # errors before any audio still get a proper status
            if first is None:
                raise BackendError("the backend produced no audio")
        except BaseException as exc:
            if run is not None:
                await run.close()
            if isinstance(exc, asyncio.CancelledError):
                tracker.finish("cancelled")
                raise
            if not isinstance(exc, APIError | BackendError | TimeoutError):
                tracker.finish("error")
                raise
            api = to_api_error(exc, config.request_timeout_s)
            tracker.finish(outcome_of(api.status), api.message)
            raise api from None
        stream_body = _sse_body if body.stream_mode == "sse" else _raw_body
        media_type = sse.MEDIA_TYPE if body.stream_mode == "sse" else MEDIA_TYPES[body.response_format]
        return AudioStreamResponse(
            stream_body(body, run, first, tracker),
            media_type=media_type,
            headers={"X-Request-Id": request_id, "Cache-Control": "no-store"},
        )

    async def _whole_file(request: Request, body: SpeechRequest, run: SynthesisRun, tracker: Tracker) -> Response:
        async def collect() -> list[np.ndarray]:
            chunks = []
            while (chunk := await run.next_chunk()) is not None:
                chunks.append(chunk)
            return chunks

        collecting = asyncio.ensure_future(collect())
        watching = asyncio.ensure_future(wait_for_disconnect(request))
        try:
            await asyncio.wait({collecting, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
            if not collecting.done():  # the client went away: stop the backend now
                collecting.cancel()
                await asyncio.gather(collecting, return_exceptions=True)
            await run.close()
        if collecting.cancelled():
            tracker.finish("cancelled", "client disconnected")
            return Response(status_code=499)
        chunks = collecting.result()  # raises the backend's error, mapped by the caller
        if not chunks:  # never a silent success with an empty file
            raise BackendError("the backend produced no audio")
        audio = np.concatenate(chunks)
        if body.speed != 1.0:
            audio = await asyncio.to_thread(change_tempo, audio, run.out_rate, body.speed)
        data = await asyncio.to_thread(encode_audio, audio, run.out_rate, body.response_format)
        assert run.usage is not None
        headers = {name: str(value(run.usage)) for name, value in USAGE_HEADERS}
        headers["X-Request-Id"] = tracker.request_id
        tracker.finish("ok")
        return Response(data, media_type=MEDIA_TYPES[body.response_format], headers=headers)

    async def _raw_body(
        body: SpeechRequest, run: SynthesisRun, first: np.ndarray | None, tracker: Tracker
    ) -> AsyncIterator[bytes]:
        encoder = StreamEncoder(body.response_format, run.out_rate)
        try:
            chunk = first
            while chunk is not None:
                yield encoder.encode(chunk)
                chunk = await run.next_chunk()
            if tail := encoder.flush():
                yield tail
            tracker.finish("ok")
        except (BackendError, TimeoutError) as exc:
            api = to_api_error(exc, config.request_timeout_s)
            tracker.finish(outcome_of(api.status), f"raw stream truncated: {api.message}")
            raise
        except Exception as exc:  # a bug, not a backend answer: say so (not "client disconnected") and cut the stream
            log.exception("raw stream %s truncated by an unexpected error", tracker.request_id)
            tracker.finish("error", f"raw stream truncated: {type(exc).__name__}: {exc}")
            raise
        finally:
            tracker.finish("cancelled", "client disconnected")  # no-op unless the client went away
            await run.close()

    async def _sse_body(
        body: SpeechRequest, run: SynthesisRun, first: np.ndarray | None, tracker: Tracker
    ) -> AsyncIterator[bytes]:
        encoder = StreamEncoder(body.response_format, run.out_rate)
        sent_audio = False
        try:
            chunk = first
            while chunk is not None:
                yield sse.delta_event(encoder.encode(chunk), body.response_format)
                sent_audio = True
                chunk = await run.next_chunk()
            if tail := encoder.flush():
                yield sse.delta_event(tail, body.response_format)
            assert run.usage is not None
            yield sse.done_event(run.usage)
            tracker.finish("ok")
        except (BackendError, TimeoutError) as exc:
            api = to_api_error(exc, config.request_timeout_s)
            tracker.finish(outcome_of(api.status), api.message)
            yield sse.error_event(api.status, api.message, partial_audio=sent_audio)
        finally:
            tracker.finish("cancelled", "client disconnected")
            await run.close()

    @app.get("/v1/audio/voices", response_model=VoiceList, responses=ERROR_RESPONSES)
    async def list_voices() -> VoiceList:
        uploaded = await backend.list_voices()
        speakers = {s for m in backend.models() for s in m.speakers}
        names = sorted({"default", *speakers, *(v.name for v in uploaded)})
        return VoiceList(voices=names, uploaded_voices=[_voice_out(v) for v in uploaded])

    @app.post(
        "/v1/audio/voices",
        response_model=VoiceCreated,
        dependencies=[Depends(require_multipart)],
        responses=ERROR_RESPONSES,
    )
    async def upload_voice(
        audio_sample: Annotated[UploadFile, File(description="Reference recording, 1-30 s (wav, flac, mp3, ogg).")],
        name: Annotated[str, Form(description="Voice name: letters, digits, '-' and '_'; case-insensitive.")],
        consent: Annotated[str, Form(description="Consent record id: the speaker agreed to this voice being cloned.")],
        ref_text: Annotated[
            str | None, Form(description="Transcript of the sample (enables in-context cloning).")
        ] = None,
        speaker_description: Annotated[str | None, Form()] = None,
    ) -> VoiceCreated:
        voice_name = name.strip().lower()
        if not VOICE_NAME.match(voice_name):
            raise APIError(400, "name: 1-64 of a-z, 0-9, '-', '_', starting with a letter or digit", "name")
        builtin = {"default", *(s for m in backend.models() for s in m.speakers)}
        if voice_name in builtin:
            raise APIError(400, f"name: {voice_name!r} is a built-in voice and cannot be replaced", "name")
        if not consent.strip():
            raise APIError(400, "consent: required (the speaker's consent to cloning this voice)", "consent")
        mime_type = (audio_sample.content_type or "application/octet-stream").lower()
        if mime_type not in VOICE_MIME_TYPES:
            raise APIError(415, f"audio_sample: unsupported content type {mime_type!r}", "audio_sample")
        data = await audio_sample.read(config.max_voice_upload_bytes + 1)
        if len(data) > config.max_voice_upload_bytes:
            raise APIError(413, f"audio_sample: larger than {config.max_voice_upload_bytes} bytes", "audio_sample")
        await asyncio.to_thread(check_audio, data, config.ref_audio, "audio_sample")
        existing = await backend.list_voices()
        if voice_name not in {v.name for v in existing} and len(existing) >= config.max_uploaded_voices:
            raise APIError(400, f"at most {config.max_uploaded_voices} uploaded voices; delete one first", "name")
        upload = VoiceUpload(voice_name, consent.strip(), data, mime_type, ref_text, speaker_description)
        try:
            info = await backend.register_voice(upload)
        except BackendError as exc:
            raise to_api_error(exc, config.request_timeout_s) from None
        return VoiceCreated(voice=_voice_out(info))

    @app.delete("/v1/audio/voices/{name}", response_model=VoiceDeleted, responses=ERROR_RESPONSES)
    async def delete_voice(name: str) -> VoiceDeleted:
        voice_name = name.strip().lower()
        try:
            await backend.delete_voice(voice_name)
        except NotFound:
            raise APIError(404, f"voice {voice_name!r} does not exist", "name") from None
        except BackendError as exc:
            raise to_api_error(exc, config.request_timeout_s) from None
        return VoiceDeleted(name=voice_name)

    @app.get("/v1/models", response_model=ModelList, responses=ERROR_RESPONSES)
    async def list_models() -> ModelList:
        return ModelList(data=[ModelCard(id=m.id, created=m.created) for m in backend.models()])

    @app.get("/v1/models/{model_id}", response_model=ModelCard, responses=ERROR_RESPONSES)
    async def get_model(model_id: str) -> ModelCard:
        info = pick_model(backend.models(), model_id)
        return ModelCard(id=info.id, created=info.created)

    @app.get("/live", response_model=HealthStatus)
    async def live() -> HealthStatus:
        return HealthStatus(status="alive")

    async def _readiness(ok_status: str) -> JSONResponse:
        if await backend.ready():
            return JSONResponse({"status": ok_status})
        return JSONResponse(error_body(503, "not ready: no compatible talker and codec reachable"), status_code=503)

    @app.get("/ready", response_model=HealthStatus, responses={503: ERROR_RESPONSES[503]})
    async def ready() -> JSONResponse:
        return await _readiness("ready")

    @app.get("/health", response_model=HealthStatus, responses={503: ERROR_RESPONSES[503]})
    async def health() -> JSONResponse:
        return await _readiness("healthy")

    @app.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
    async def prometheus_metrics() -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    def openapi() -> dict:
        """FastAPI's schema, minus the 422 it documents by default: schema errors are answered as 400."""
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    operation.get("responses", {}).pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _voice_out(info: VoiceInfo) -> UploadedVoice:
    return UploadedVoice(
        name=info.name,
        consent=info.consent,
        created_at=info.created_at,
        file_size=info.file_size,
        mime_type=info.mime_type,
        ref_text=info.ref_text,
        speaker_description=info.speaker_description,
    )
