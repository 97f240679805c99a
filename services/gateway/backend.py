"""The interface the HTTP layer calls: everything behind it (voice resolution, talker, codec, reference encoder).

The HTTP app validates and resolves a request into a `SynthesisRequest`, then iterates `Backend.synthesize`:
float32 PCM chunks (mono, at the model's sample rate), then exactly one final `Usage`. Closing the iterator
(`aclose()`, which the app always does) must cancel the backend streams. Failures are raised as `BackendError`
subclasses so the app can answer with the right status.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

TaskType = Literal["CustomVoice", "VoiceDesign", "Base"]


@dataclass(frozen=True)
class ModelInfo:
    """What the gateway needs to know about one served model to validate requests for it."""

    id: str
    task_type: TaskType  # the checkpoint variant; a request's task type must match it
    sample_rate: int  # native output rate of the codec
    output_sample_rates: tuple[int, ...]  # rates a request may ask for (resampled by the gateway)
    languages: tuple[str, ...]  # title-cased, including "Auto"
    speakers: tuple[str, ...] = ()  # built-in speakers (CustomVoice), lowercase
    default_speaker: str | None = None
    max_new_tokens: int = 4096
    speaker_embedding_dim: int | None = None  # talker hidden size for Base; None when not accepted
    created: int = 0


@dataclass
class SynthesisRequest:
    """A validated, resolved speech request. `voice` is a built-in speaker, an uploaded voice or None."""

    model: str
    text: str
    task_type: TaskType
    language: str = "Auto"
    voice: str | None = None
    instructions: str | None = None
    ref_audio: bytes | None = None  # encoded audio file bytes (wav/flac/mp3/ogg), already checked to decode
    ref_text: str | None = None
    x_vector_only_mode: bool = False
    speaker_embedding: list[float] | None = None
    max_new_tokens: int | None = None
    ignore_eos: bool = False  # block end of speech: the talker generates max_new_tokens - 1 frames
    seed: int | None = None  # int64 as vLLM-Omni takes it; the talker's uint64 seed is `seed % 2**64`
    initial_codec_chunk_frames: int | None = None
    non_streaming_mode: bool | None = None
    sampling: dict[str, float | int] = field(default_factory=dict)  # temperature / top_p / top_k (-1: off)
    request_id: str = ""
    # The client takes float samples (gRPC PCM_F32LE): the codec then sends float32. Every other output is 16-bit,
    # so the codec sends int16, half the bytes through its event loop and the gateway, and nothing is lost.
    float_samples: bool = False
    # time.monotonic() of points on the request's way, for the gateway's request log line: `voices` (the voice list
    # read, by the HTTP handler), `prepared` (its prompt built) and `talker_sent` (its talker request taken for a write
    # to the talker), the last two by the backend.
    marks: dict[str, float] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Usage:
    """Token usage of one synthesis: text and reference-audio prompt tokens in, codec frames out."""

    input_text_tokens: int = 0
    input_audio_tokens: int = 0
    output_tokens: int = 0

    @property
    def input_tokens(self) -> int:
        return self.input_text_tokens + self.input_audio_tokens

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class VoiceUpload:
    name: str  # lowercase, validated by the app
    consent: str
    audio: bytes
    mime_type: str
    ref_text: str | None = None
    speaker_description: str | None = None


@dataclass(frozen=True)
class VoiceInfo:
    name: str
    consent: str
    created_at: int
    file_size: int
    mime_type: str
    ref_text: str | None = None
    speaker_description: str | None = None


class BackendError(Exception):
    """A backend failure; subclasses say what kind, so the app can pick the status."""


class InvalidRequest(BackendError):
    """The backend rejected the request's content (e.g. prompt too long for the talker)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class Overloaded(BackendError):
    """Every replica refused the request because it is full; retry after `retry_after` seconds."""

    def __init__(self, message: str = "all talker replicas are at capacity", retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(BackendError):
    """No healthy replica of a needed service."""


class NotFound(BackendError):
    """A named thing (a voice) does not exist."""


class Backend(abc.ABC):
    """What the gateway's HTTP layer needs from the services behind it."""

    @abc.abstractmethod
    def models(self) -> list[ModelInfo]:
        """The served models; the first one is the default for requests that name none."""

    @abc.abstractmethod
    async def ready(self) -> bool:
        """True when at least one talker and one codec are reachable and compatible."""

    @abc.abstractmethod
    def synthesize(self, request: SynthesisRequest) -> AsyncIterator[np.ndarray | Usage]:
        """Float32 mono PCM chunks at the model's sample rate, then one final `Usage`. Closing cancels."""

    @abc.abstractmethod
    async def list_voices(self) -> list[VoiceInfo]:
        """Uploaded voices."""

    async def voices_for_request(self, voice: str) -> list[VoiceInfo]:
        """The uploaded voices a speech request naming `voice` is resolved against. Here a fresh `list_voices()`;
        a backend may answer from a list a little older (`GrpcBackend`: at most 1 s, re-read for an unknown name)."""
        return await self.list_voices()

    def watch_writes(self, observe: Callable[[str, float], None]) -> None:
        """Have `observe(service, seconds)` called for each message written to a backend service (the app's metrics);
        a backend that writes none ignores it."""
        return None

    @abc.abstractmethod
    async def register_voice(self, upload: VoiceUpload) -> VoiceInfo:
        """Store an uploaded voice (replacing one of the same name)."""

    @abc.abstractmethod
    async def delete_voice(self, name: str) -> None:
        """Delete an uploaded voice; raises `NotFound` when there is none of that name."""
