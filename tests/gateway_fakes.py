"""A real, in-process `Backend` for testing the gateway's HTTP layer without the talker / codec / reference encoder.

`ToneBackend` produces deterministic PCM (a sine whose pitch follows the seed) in a few chunks. It is a test
double for the HTTP layer only; the end-to-end tests with the real services live elsewhere. The input text
steers it: a text starting with
  "hold "  waits after its first chunk until `release` is set (or the stream is cancelled),
  "fail "  raises a backend failure after its first chunk,
  "full "  refuses at once as overloaded (-> 429),
  "empty " ends with usage and no audio at all.
It counts started, finished and closed streams so tests can see cancellation reach the backend.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import numpy as np
from omni.services.gateway.backend import (
    Backend,
    BackendError,
    ModelInfo,
    NotFound,
    Overloaded,
    SynthesisRequest,
    Usage,
    VoiceInfo,
    VoiceUpload,
)

SAMPLE_RATE = 24000
CHUNK_SAMPLES = 3840  # two 80 ms codec frames
NUM_CHUNKS = 4
LANGUAGES = ("Auto", "Chinese", "English", "German")

CUSTOM_VOICE = ModelInfo(
    id="tiny-customvoice",
    task_type="CustomVoice",
    sample_rate=SAMPLE_RATE,
    output_sample_rates=(8000, 24000),
    languages=LANGUAGES,
    speakers=("ryan", "vivian"),
    default_speaker="vivian",
    max_new_tokens=2048,
)
BASE = ModelInfo(
    id="tiny-base",
    task_type="Base",
    sample_rate=SAMPLE_RATE,
    output_sample_rates=(8000, 24000),
    languages=LANGUAGES,
    speaker_embedding_dim=8,
    max_new_tokens=2048,
)


def expected_pcm(seed: int | None) -> np.ndarray:
    """The whole float32 utterance `ToneBackend` produces for a seed."""
    freq = 220.0 + (seed or 0) % 200
    t = np.arange(NUM_CHUNKS * CHUNK_SAMPLES) / SAMPLE_RATE
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


class ToneBackend(Backend):
    def __init__(self) -> None:
        self.release = threading.Event()
        self.is_ready = True
        self.started = 0
        self.finished = 0
        self.closed = 0
        self.requests: list[SynthesisRequest] = []
        self.voices: dict[str, VoiceInfo] = {}
        self.voice_audio: dict[str, bytes] = {}

    def models(self) -> list[ModelInfo]:
        return [CUSTOM_VOICE, BASE]

    async def ready(self) -> bool:
        return self.is_ready

    @property
    def active(self) -> int:
        return self.started - self.closed

    async def synthesize(self, request: SynthesisRequest) -> AsyncIterator[np.ndarray | Usage]:
        if request.text.startswith("full "):
            raise Overloaded(retry_after=2.0)
        self.requests.append(request)
        self.started += 1
        audio = expected_pcm(request.seed)
        try:
            for i in range(0 if request.text.startswith("empty ") else NUM_CHUNKS):
                yield audio[i * CHUNK_SAMPLES : (i + 1) * CHUNK_SAMPLES]
                if i == 0 and request.text.startswith("fail "):
                    raise BackendError("codec replica failed mid-stream")
                if i == 0 and request.text.startswith("hold "):
                    while not self.release.is_set():
                        await asyncio.sleep(0.005)
            audio_tokens = 10 if request.ref_audio is not None and not request.x_vector_only_mode else 0
            self.finished += 1
            yield Usage(input_text_tokens=len(request.text.split()), input_audio_tokens=audio_tokens, output_tokens=8)
        finally:
            self.closed += 1

    async def list_voices(self) -> list[VoiceInfo]:
        return sorted(self.voices.values(), key=lambda v: v.name)

    async def register_voice(self, upload: VoiceUpload) -> VoiceInfo:
        info = VoiceInfo(
            name=upload.name,
            consent=upload.consent,
            created_at=int(time.time()),
            file_size=len(upload.audio),
            mime_type=upload.mime_type,
            ref_text=upload.ref_text,
            speaker_description=upload.speaker_description,
        )
        self.voices[upload.name] = info
        self.voice_audio[upload.name] = upload.audio
        return info

    async def delete_voice(self, name: str) -> None:
        if name not in self.voices:
            raise NotFound(f"voice {name!r} does not exist")
        del self.voices[name]
        del self.voice_audio[name]
