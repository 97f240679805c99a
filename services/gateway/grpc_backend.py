"""The real `Backend`: drives the talker, codec and reference-encoder services over gRPC.

Per request: resolve the voice (a CustomVoice speaker, an uploaded voice or reference audio through the
reference encoder), build the prompt ids with `omni.talker.prompt`, open the talker's Generate and a codec stream at
the same time (each on the least-loaded replica that admits it), then pipe the talker's codec chunks into the codec's
stream and yield its PCM as it comes. Talker and codec streams go over one GenerateMany / DecodeMany call per replica,
shared by this worker's requests (`shared_calls`), so the chunks and audio of many requests travel in one message.

Replicas come from static `host:port` addresses or DNS names (a headless Service resolves to one address per
pod). A poller refreshes addresses and loads; a replica that fails an RPC is marked down and polled again
after `down_s`. Closing the `synthesize` iterator cancels the talker call and the codec stream at once, which frees
the talker slot and the codec slot within one engine step.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import grpc
import numpy as np
import torch
from omni.services.common.identity import codec_mismatch, model_identity
from omni.services.common.packing import decode_pcm, unpack_codes, unpack_vector
from omni.services.talker.requests import prompt_to_proto

from omni.models.qwen3_tts.config import load_config
from omni.models.qwen3_tts.loader import TextTokenizer
from omni.proto import codec_pb2, codec_pb2_grpc, common_pb2, refenc_pb2, refenc_pb2_grpc, talker_pb2, talker_pb2_grpc
from omni.talker.prompt import VARIANT_TASK, PromptBuilder, PromptError, SpeechRequest

from .backend import (
    Backend,
    BackendError,
    InvalidRequest,
    ModelInfo,
    NotFound,
    Overloaded,
    SynthesisRequest,
    Unavailable,
    Usage,
    VoiceInfo,
    VoiceUpload,
)
from .shared_calls import CodecStream, SharedCall, StreamFailed, TalkerStream

log = logging.getLogger("omni.gateway")

SAMPLE_RATE = 24000
VOICES_MAX_AGE_S = 1.0  # how stale the uploaded-voice list behind a speech request may be (see VoiceListCache)
OUTPUT_SAMPLE_RATES = (8000, 16000, 22050, 24000, 32000, 44100, 48000)
CHANNEL_OPTIONS = (
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    # Reconnect quickly to a replica that was down (the default backoff grows to minutes).
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
)


# Status codes that say "this replica is broken", not "this request was refused".
REPLICA_FAILURES = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)
# A prompt whose texts are at most this long is built on the event loop (~0.1-1 ms, mostly tokenizing): a worker
# thread's hand-off costs about as much again, and in a burst every threaded build waits for the GIL behind the
# others, so a worker's burst reached the talker together (32 prompts on 2 CPU cores: median ~23 ms, now ~8 ms;
# tools/bench_prepare.py).
# Longer texts (up to max_input_chars, ~7 ms) still build in a thread, so one cannot hold the loop that long.
INLINE_PROMPT_CHARS = 500


@dataclass
class Replica:
    """One backend address with its channel, its last reported load and its health."""

    address: str
    channel: grpc.aio.Channel
    stub: object
    load: common_pb2.Load | None = None
    identity: common_pb2.ModelIdentity | None = None
    compatible: bool = False
    down_until: float = 0.0
    picked: int = 0  # streams this gateway opened since the last load report asked (keeps bursts spread out)

    @property
    def up(self) -> bool:
        return self.compatible and self.load is not None and self.load.accepting and time.monotonic() >= self.down_until

    def score(self) -> float:
        load = self.load
        busy = load.active_streams + load.queue_depth + self.picked
        return busy / max(1, load.capacity)


@dataclass
class ReplicaPool:
    """The replicas of one service, from static addresses or DNS names (each `host:port`)."""

    name: str
    targets: list[str]
    make_stub: Callable[[grpc.aio.Channel], object]
    check: Callable[[Replica], object]  # async: fetch identity (once) and load; raises on failure
    down_s: float = 2.0
    wait_s: float = 3.0  # how long `usable()` waits for a poll round to find a replica when none is usable
    replicas: dict[str, Replica] = field(default_factory=dict)
    polled: asyncio.Event = field(default_factory=asyncio.Event)  # set when a poll round ends, then replaced

    async def refresh(self) -> None:
        addresses = await resolve_targets(self.targets)
        for address in set(self.replicas) - set(addresses):
            await self.replicas.pop(address).channel.close()
        for address in addresses:
            if address not in self.replicas:
                channel = grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
                self.replicas[address] = Replica(address, channel, self.make_stub(channel))
        await asyncio.gather(*(self._poll(r) for r in list(self.replicas.values())))
        self.polled.set()
        self.polled = asyncio.Event()

    async def _poll(self, replica: Replica) -> None:
        picked_before = replica.picked
        try:
            await self.check(replica)
            # The new load counts the streams picked before the poll asked; those picked while it was answered stay
            # counted (a burst during a slow GetLoad would otherwise all go to the replica that looked idle).
            replica.picked -= picked_before
            if replica.down_until:
                log.info("%s replica %s is back", self.name, replica.address)
                replica.down_until = 0.0
        except Exception as e:  # any failure of a poll means "not usable now"
            if not replica.down_until:
                log.warning("%s replica %s unreachable: %s", self.name, replica.address, e)
            replica.down_until = time.monotonic() + self.down_s
            replica.load = None

    def ranked(self) -> list[Replica]:
        """Usable replicas, least loaded first."""
        return sorted((r for r in self.replicas.values() if r.up), key=Replica.score)

    async def usable(self) -> list[Replica]:
        """`ranked()`, but when no replica is usable, wait up to `wait_s` for the poll rounds to find one. Each gateway
        process polls on its own, so right after a start (or a replica's restart) one can still count a replica as
        down that is up: on the GPU a request was refused 0.2 s before its worker saw the codec (docs/benchmarks.md,
        run 40). A replica that is really down costs the request `wait_s` before it is refused."""
        ranked, deadline = self.ranked(), time.monotonic() + self.wait_s
        while not ranked and self.targets and (remaining := deadline - time.monotonic()) > 0:
            try:
                await asyncio.wait_for(self.polled.wait(), remaining)
            except TimeoutError:
                break
            ranked = self.ranked()
        return ranked

    def mark_down(self, replica: Replica, reason: str) -> None:
        log.warning("%s replica %s marked down: %s", self.name, replica.address, reason)
        replica.down_until = time.monotonic() + self.down_s

    async def close(self) -> None:
        for replica in self.replicas.values():
            await replica.channel.close()
        self.replicas.clear()


async def resolve_targets(targets: list[str]) -> list[str]:
    """`host:port` targets -> one `ip:port` per address the host resolves to (IP literals pass through)."""
    loop = asyncio.get_running_loop()
    addresses: list[str] = []
    for target in targets:
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"backend address {target!r} must be host:port")
        host = host.strip("[]")
        try:
            infos = await loop.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            log.warning("cannot resolve %s: %s", target, e)
            continue
        for info in infos:
            ip = info[4][0]
            address = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
            if address not in addresses:
                addresses.append(address)
    return addresses


class VoiceListCache:
    """The uploaded-voice list that speech requests are resolved against, so that a request naming a voice (a
    built-in speaker, or an uploaded voice already seen) costs no ListVoices round trip.

    The list is re-read once it is `max_age_s` old, and at once for a name that is neither in it nor a built-in
    speaker: a voice just uploaded through another gateway replica (the registry is shared in Redis) is found by its
    first request. Stale for at most `max_age_s`: a deletion through another replica (the request then fails at the
    reference encoder, 404, instead of 400 unknown voice) and an upload elsewhere under a built-in speaker's name
    (resolve prefers the uploaded voice; until the re-read the built-in one is used).

    Requests for known names that find the list stale share one read: a burst of requests would otherwise each send
    a ListVoices (on one H200, 128 streams starting together sent 408 in 0.19 s, and some of them waited ~180 ms for
    theirs). A request for an unknown name still reads on its own, so the read starts after the request arrived.
    """

    def __init__(self, fetch: Callable[[], Awaitable[list[VoiceInfo]]], max_age_s: float = VOICES_MAX_AGE_S) -> None:
        self._fetch = fetch
        self.max_age_s = max_age_s
        self._voices: list[VoiceInfo] = []
        self._names: frozenset[str] = frozenset()
        self._read_at = -math.inf  # when the read of the kept list started
        self._cleared_at = -math.inf
        self._refresh: asyncio.Future[list[VoiceInfo]] | None = None  # the shared read in flight
        self._refresh_started = -math.inf

    async def lookup(self, name: str, builtins: Collection[str]) -> list[VoiceInfo]:
        if not (name in self._names or name in builtins):
            return await self._read()
        if time.monotonic() - self._read_at < self.max_age_s:
            return self._voices
        if self._refresh is None or self._refresh.done() or self._refresh_started < self._cleared_at:
            self._refresh_started = time.monotonic()
            self._refresh = asyncio.ensure_future(self._read())
            self._refresh.add_done_callback(lambda read: read.cancelled() or read.exception())  # callers may be gone
        return await asyncio.shield(self._refresh)  # a caller that goes away does not cancel the others' read

    async def _read(self) -> list[VoiceInfo]:
        started = time.monotonic()
        voices = await self._fetch()
        if started > max(self._read_at, self._cleared_at):  # never replace a newer read, or keep one from before clear
            self._voices, self._names, self._read_at = voices, frozenset(v.name for v in voices), started
        return voices

    def clear(self) -> None:
        """This gateway registered or deleted a voice: the next request re-reads the list."""
        self._read_at = -math.inf
        self._cleared_at = time.monotonic()


@dataclass
class PreparedRequest:
    """What one synthesis sends: the talker request and the codec's priming codes."""

    generate: talker_pb2.GenerateRequest
    ref_codes: bytes = b""
    ref_code_frames: int = 0
    text_tokens: int = 0


class GrpcBackend(Backend):
    """The gateway's backend over the talker, codec and reference-encoder services."""

    def __init__(
        self,
        model_dir: str | Path,
        talkers: list[str],
        codecs: list[str],
        refencs: list[str],
        model_id: str | None = None,
        poll_s: float = 0.5,
        down_s: float = 2.0,
        voices_max_age_s: float = VOICES_MAX_AGE_S,
        replica_wait_s: float = 3.0,
    ) -> None:
        model_dir = Path(model_dir)
        self.config = load_config(model_dir)
        self.tokenizer = TextTokenizer(model_dir)
        self.builder = PromptBuilder(self.config, self.tokenizer.encode)
        self.identity = model_identity(model_dir)
        self.variant = self.config.tts_model_type
        self.poll_s = poll_s
        speakers = tuple(sorted(self.builder.speakers)) if self.variant == "custom_voice" else ()
        languages = ("Auto", *(name.title() for name in self.builder.supported_languages if name != "auto"))
        self.model_info = ModelInfo(
            id=model_id or model_dir.resolve().name,
            task_type=VARIANT_TASK[self.variant],  # type: ignore[arg-type]
            sample_rate=SAMPLE_RATE,
            output_sample_rates=OUTPUT_SAMPLE_RATES,
            languages=languages,
            speakers=speakers,
            default_speaker=("vivian" if "vivian" in speakers else speakers[0]) if speakers else None,
            max_new_tokens=4096,
            speaker_embedding_dim=self.config.talker.hidden_size if self.variant == "base" else None,
            created=int(time.time()),
        )
        pools = {"down_s": down_s, "wait_s": replica_wait_s}
        self.talkers = ReplicaPool("talker", talkers, talker_pb2_grpc.TalkerServiceStub, self._check_talker, **pools)
        self.codecs = ReplicaPool("codec", codecs, codec_pb2_grpc.CodecServiceStub, self._check_codec, **pools)
        self.refencs = ReplicaPool(
            "refenc", refencs, refenc_pb2_grpc.ReferenceEncoderServiceStub, self._check_refenc, **pools
        )
        self.voices = VoiceListCache(self.list_voices, voices_max_age_s)
        self.shared_calls: dict[tuple[str, str], SharedCall] = {}  # (kind, replica address) -> this worker's call
        self.observe_write: Callable[[str, float], None] | None = None
        self._poller: asyncio.Task | None = None

    # --- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Discover replicas once, then keep their loads fresh in the background."""
        await self._refresh()
        self._poller = asyncio.create_task(self._poll_forever())

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        for call in self.shared_calls.values():
            await call.close()
        self.shared_calls.clear()
        for pool in (self.talkers, self.codecs, self.refencs):
            await pool.close()

    async def _refresh(self) -> None:
        await asyncio.gather(self.talkers.refresh(), self.codecs.refresh(), self.refencs.refresh())

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            try:
                await self._refresh()
            except Exception:
                log.exception("backend refresh failed")

    async def _check_talker(self, replica: Replica) -> None:
        if replica.identity is None:
            info = await replica.stub.GetModelInfo(talker_pb2.GetModelInfoRequest(), timeout=2.0)
            self._set_identity(replica, info.model, "talker replica", same_checkpoint=True)
        replica.load = (await replica.stub.GetLoad(talker_pb2.GetLoadRequest(), timeout=2.0)).load

    async def _check_codec(self, replica: Replica) -> None:
        if replica.identity is None:
            info = await replica.stub.GetModelInfo(codec_pb2.GetModelInfoRequest(), timeout=2.0)
            self._set_identity(replica, info.model, "codec replica")
        replica.load = (await replica.stub.GetLoad(codec_pb2.GetLoadRequest(), timeout=2.0)).load

    async def _check_refenc(self, replica: Replica) -> None:
        info = await replica.stub.GetModelInfo(refenc_pb2.GetModelInfoRequest(), timeout=2.0)
        self._set_identity(replica, info.model, "reference encoder")
        replica.load = common_pb2.Load(capacity=1, accepting=True)  # the encoder reports no load; spread evenly

    def _set_identity(
        self, replica: Replica, identity: common_pb2.ModelIdentity, kind: str, same_checkpoint: bool = False
    ) -> None:
        """Record what `replica` serves. It is compatible when it speaks our codec (and, with `same_checkpoint`,
        runs our checkpoint: a talker must build the same prompts); an incompatible one is logged and never picked."""
        replica.identity = identity
        mismatch = codec_mismatch(self.identity, identity)
        ours, theirs = self.identity.checkpoint_fingerprint, identity.checkpoint_fingerprint
        if same_checkpoint and mismatch is None and theirs != ours:
            mismatch = f"checkpoint {theirs!r} != {ours!r}"
        if mismatch:
            log.error("%s %s is incompatible: %s", kind, replica.address, mismatch)
        replica.compatible = mismatch is None

    # --- Backend ---------------------------------------------------------------------------------------------

    def models(self) -> list[ModelInfo]:
        return [self.model_info]

    async def ready(self) -> bool:
        """A talker and a codec, plus a reference encoder for Base models (every request needs one)."""
        needs_refenc = self.variant == "base" and bool(self.refencs.targets)
        up = bool(self.talkers.ranked()) and bool(self.codecs.ranked())
        return up and (bool(self.refencs.ranked()) or not needs_refenc)

    async def synthesize(self, request: SynthesisRequest) -> AsyncIterator[np.ndarray | Usage]:
        prepared = await self._prepare(request)
        request.marks["prepared"] = time.monotonic()
        codec_format = (
            common_pb2.SAMPLE_FORMAT_PCM_F32LE if request.float_samples else common_pb2.SAMPLE_FORMAT_PCM_S16LE
        )
        # The codec's stream is opened (a round trip, and a slot reset and primed) while the talker prefills,
        # not after its first chunk: both are on the way to the first audio.
        talker_open = asyncio.ensure_future(self._open_talker(prepared.generate))
        codec_open = asyncio.ensure_future(self._open_codec(request.request_id, prepared, codec_format))
        pump: asyncio.Task | None = None
        read: asyncio.Task | None = None
        try:
            done, _ = await asyncio.wait((talker_open, codec_open), return_when=asyncio.FIRST_EXCEPTION)
            for opening in (talker_open, codec_open):  # a refusal (the talker's when both failed) ends the request
                if opening in done:
                    opening.result()
            talker_stream, first, talker = talker_open.result()
            if talker_stream.sent_at is not None:
                request.marks["talker_sent"] = talker_stream.sent_at
            codec_stream, codec = codec_open.result()
            summary: list[talker_pb2.GenerateSummary] = []
            pump = asyncio.create_task(self._pump(talker_stream, first, talker, codec_stream, summary))
            while True:
                read = asyncio.ensure_future(codec_stream.read())
                waiting = {read} if pump.done() else {read, pump}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if pump.done() and pump.exception() is not None:
                    if isinstance(pump.exception(), StreamFailed):  # the codec's: the talker's is a BackendError
                        self._raise_codec_failure(pump.exception(), codec)
                    raise pump.exception()
                if not read.done():
                    await asyncio.wait({read})  # the pump finished cleanly: the codec still owes audio
                try:
                    event = read.result()
                except StreamFailed as e:
                    self._raise_codec_failure(e, codec)
                kind = event.WhichOneof("kind")
                if kind == "audio":
                    yield decode_pcm(event.audio.pcm, codec_format)
                elif kind == "summary":
                    break
            await pump
            frames = summary[0].num_frames if summary else 0
            yield Usage(prepared.text_tokens, prepared.ref_code_frames, frames)
        finally:
            # One place cancels everything: normal end, error, client disconnect (aclose) or deadline. An opening
            # still in flight cancels its own call or stream; one that finished has it cancelled here.
            for task in (talker_open, codec_open, pump, read):
                if task is not None:
                    task.cancel()
            await asyncio.gather(talker_open, codec_open, return_exceptions=True)
            for opening in (talker_open, codec_open):
                if not opening.cancelled() and opening.exception() is None:
                    opening.result()[0].cancel()

    def _raise_codec_failure(self, failure: StreamFailed, codec: Replica) -> NoReturn:
        """The codec ended the request's stream (or the shared call under it): a broken replica is marked down."""
        if failure.code in REPLICA_FAILURES:
            self.codecs.mark_down(codec, failure.message or failure.code.name)
        raise BackendError(f"codec {codec.address} failed mid-stream: {failure.code.name}: {failure.message}")

    async def _pump(
        self, talker_stream: TalkerStream, first, talker: Replica, codec_stream: CodecStream, summary: list
    ):
        """Talker chunks -> codec stream; the talker's summary ends the codec's input."""
        event = first
        while True:
            kind = event.WhichOneof("kind")
            if kind == "chunk":
                await codec_stream.write_chunk(event.chunk)  # StreamFailed: the codec's failure
            elif kind == "summary":
                summary.append(event.summary)
                break
            try:
                event = await talker_stream.read()
            except StreamFailed as e:
                if e.code in REPLICA_FAILURES:
                    self.talkers.mark_down(talker, e.message or e.code.name)
                raise BackendError(f"talker {talker.address} failed mid-stream: {e.code.name}: {e.message}") from None
        codec_stream.end()

    def _shared_call(self, replica: Replica, connect: Callable[..., SharedCall]) -> SharedCall:
        """This worker's many-stream call to `replica`, opened again after one that ended."""
        key = (connect.__name__, replica.address)
        call = self.shared_calls.get(key)
        if call is None or not call.alive:
            service = connect.__name__.removeprefix("to_")  # talker or codec
            on_write = None if self.observe_write is None else functools.partial(self.observe_write, service)
            call = self.shared_calls[key] = connect(replica.stub, on_write)
        return call

    def watch_writes(self, observe: Callable[[str, float], None]) -> None:
        self.observe_write = observe

    async def _open_talker(self, generate: talker_pb2.GenerateRequest):
        """Start the generation on the least-loaded talker that admits it; returns (stream, first event, replica)."""
        retry_after: float | None = None
        tried = 0
        for replica in await self.talkers.usable():
            tried += 1
            replica.picked += 1
            stream = self._shared_call(replica, SharedCall.to_talker).open_talker(generate)
            try:
                return stream, await stream.read(), replica
            except StreamFailed as e:
                stream.cancel()
                if e.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    retry_after = min(retry_after or 1e9, e.retry_after_s or 1.0)
                    continue
                if e.code == grpc.StatusCode.INVALID_ARGUMENT:
                    raise InvalidRequest(f"talker refused the request: {e.message}") from None
                if e.code == grpc.StatusCode.FAILED_PRECONDITION:
                    replica.compatible = False
                self.talkers.mark_down(replica, f"{e.code.name}: {e.message}")
            except BaseException:
                stream.cancel()
                raise
        if retry_after is not None:
            raise Overloaded(retry_after=retry_after)
        raise Unavailable(f"no talker replica is available (tried {tried})")

    async def _open_codec(
        self, request_id: str, prepared: PreparedRequest, sample_format: int = common_pb2.SAMPLE_FORMAT_PCM_S16LE
    ):
        """Open a stream on the least-loaded codec that admits it, primed with the reference codes; returns
        (stream, replica)."""
        opening = codec_pb2.DecodeOpen(
            request_id=request_id,
            model=self.identity,
            sample_format=sample_format,
            ref_codes=prepared.ref_codes,
            ref_code_frames=prepared.ref_code_frames,
        )
        full = False
        for replica in await self.codecs.usable():
            replica.picked += 1
            stream = self._shared_call(replica, SharedCall.to_codec).open_codec(opening)
            try:
                started = await stream.started()
                if started.sample_rate != SAMPLE_RATE:
                    raise BackendError(f"codec sample rate {started.sample_rate} != {SAMPLE_RATE}")
                return stream, replica
            except StreamFailed as e:
                stream.cancel()
                if e.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    full = True
                    continue
                if e.code == grpc.StatusCode.INVALID_ARGUMENT:
                    raise InvalidRequest(f"codec refused the request: {e.message}") from None
                self.codecs.mark_down(replica, f"{e.code.name}: {e.message}")
            except BaseException:
                stream.cancel()
                raise
        if full:
            raise Overloaded("all codec replicas are at capacity")
        raise Unavailable("no codec replica is available")

    # --- request -> prompt -----------------------------------------------------------------------------------

    async def _prepare(self, request: SynthesisRequest) -> PreparedRequest:
        ref_codes, x_vector, ref_text = None, None, request.ref_text
        if request.task_type == "Base":
            if request.speaker_embedding is not None:
                x_vector = torch.tensor(request.speaker_embedding, dtype=torch.float32)
            else:
                source = (
                    {"audio": request.ref_audio} if request.ref_audio is not None else {"voice_name": request.voice}
                )
                encoded = await self._encode(request.request_id, source)
                ref_text = ref_text or encoded.ref_text or None
                x_vector = torch.from_numpy(unpack_vector(encoded.x_vector, encoded.x_vector_dim).copy())
                ref_codes = torch.from_numpy(unpack_codes(encoded.ref_codes, encoded.ref_code_frames, 16).copy())
        x_only = request.x_vector_only_mode or (request.task_type == "Base" and not ref_text)
        speech = SpeechRequest(
            text=request.text,
            task_type=request.task_type,
            language=request.language,
            speaker=request.voice if request.task_type == "CustomVoice" else None,
            instructions=request.instructions,
            ref_text=None if x_only else ref_text,
            ref_codes=None if x_only else ref_codes,
            x_vector=x_vector,
            x_vector_only=x_only and request.task_type == "Base",
            non_streaming_mode=request.non_streaming_mode,
        )
        try:
            if len(speech.text) + len(speech.ref_text or "") + len(speech.instructions or "") <= INLINE_PROMPT_CHARS:
                prompt = self.builder.build(speech)
            else:
                prompt = await asyncio.to_thread(self.builder.build, speech)
        except PromptError as e:
            raise InvalidRequest(str(e)) from None
        wire = prompt_to_proto(prompt)
        generate = talker_pb2.GenerateRequest(
            request_id=request.request_id,
            expected_model=self.identity,
            prompt=wire,
            sampling=_sampling(request),
            subtalker_sampling=talker_pb2.SamplingParams(do_sample=False) if _greedy(request) else None,
            max_new_tokens=request.max_new_tokens or 0,
            ignore_eos=request.ignore_eos,
            chunk_plan=talker_pb2.ChunkPlan(initial_chunk_frames=request.initial_codec_chunk_frames or 0),
        )
        if request.seed is not None:
            generate.seed = request.seed % 2**64
        frames = wire.ref_code_frames
        return PreparedRequest(generate, wire.ref_codes, frames, len(prompt) + len(prompt.trailing_ids) - frames)

    async def _encode(self, request_id: str, source: dict) -> refenc_pb2.EncodeResponse:
        message = refenc_pb2.EncodeRequest(request_id=request_id, want_x_vector=True, **source)
        for replica in await self.refencs.usable():
            try:
                return await replica.stub.Encode(message, timeout=60.0)
            except grpc.aio.AioRpcError as e:
                _raise_for_client_error(e)
                self.refencs.mark_down(replica, f"{e.code().name}: {e.details()}")
        raise Unavailable("no reference encoder replica is available")

    # --- voices ----------------------------------------------------------------------------------------------

    async def _refenc_call(self, method: str, message):
        for replica in await self.refencs.usable():
            try:
                return await getattr(replica.stub, method)(message, timeout=30.0)
            except grpc.aio.AioRpcError as e:
                _raise_for_client_error(e)
                self.refencs.mark_down(replica, f"{e.code().name}: {e.details()}")
        raise Unavailable("no reference encoder replica is available")

    async def list_voices(self) -> list[VoiceInfo]:
        try:
            response = await self._refenc_call("ListVoices", refenc_pb2.ListVoicesRequest())
        except Unavailable:
            return []  # no registry (no Redis) or no encoder: there are no uploaded voices to offer
        return [_voice_info(v) for v in response.voices]

    async def voices_for_request(self, voice: str) -> list[VoiceInfo]:
        return await self.voices.lookup(voice, self.model_info.speakers)

    async def register_voice(self, upload: VoiceUpload) -> VoiceInfo:
        try:
            await self._refenc_call("DeleteVoice", refenc_pb2.DeleteVoiceRequest(name=upload.name))
        except NotFound:
            pass
        try:
            response = await self._refenc_call(
                "RegisterVoice",
                refenc_pb2.RegisterVoiceRequest(
                    name=upload.name,
                    audio=upload.audio,
                    ref_text=upload.ref_text or "",
                    consent_id=upload.consent,
                    description=upload.speaker_description or "",
                ),
            )
        finally:
            self.voices.clear()  # the next request through this gateway sees the change at once
        info = _voice_info(response.voice)
        return VoiceInfo(
            info.name, info.consent, info.created_at, len(upload.audio), upload.mime_type, info.ref_text,
            info.speaker_description,
        )  # fmt: skip

    async def delete_voice(self, name: str) -> None:
        try:
            await self._refenc_call("DeleteVoice", refenc_pb2.DeleteVoiceRequest(name=name))
        finally:
            self.voices.clear()  # the next request through this gateway sees the change at once


def _raise_for_client_error(e: grpc.aio.AioRpcError) -> None:
    """Map a reference encoder's answer about the request itself (not about the replica) to a BackendError."""
    code = e.code()
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        raise InvalidRequest(e.details() or "invalid reference audio", "ref_audio")
    if code == grpc.StatusCode.NOT_FOUND:
        raise NotFound(e.details() or "not found")
    if code == grpc.StatusCode.ALREADY_EXISTS:
        raise InvalidRequest(e.details() or "already exists", "name")
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        raise InvalidRequest(e.details() or "registry full", "name")
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        raise Unavailable(e.details() or "the reference encoder cannot serve this")


def _greedy(request: SynthesisRequest) -> bool:
    """Temperature 0 means greedy decoding (as in OpenAI-style APIs), for both heads."""
    return float(request.sampling.get("temperature", 1.0)) == 0.0


def _sampling(request: SynthesisRequest) -> talker_pb2.SamplingParams:
    params = talker_pb2.SamplingParams()
    if _greedy(request):
        params.do_sample = False
    elif "temperature" in request.sampling:
        params.temperature = float(request.sampling["temperature"])
    if "top_p" in request.sampling:
        params.top_p = float(request.sampling["top_p"])
    if "top_k" in request.sampling:
        params.top_k = max(0, int(request.sampling["top_k"]))  # -1 (off) is the talker's 0
    return params


def _voice_info(voice: refenc_pb2.Voice) -> VoiceInfo:
    return VoiceInfo(
        name=voice.name,
        consent=voice.consent_id,
        created_at=voice.created_unix_ms // 1000,
        file_size=0,
        mime_type="audio/wav",
        ref_text=voice.ref_text or None,
        speaker_description=voice.description or None,
    )
