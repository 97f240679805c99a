"""A small Python client for the gateway's gRPC `SpeechService` (streaming synthesis).

    from omni.client import SpeechClient

    with SpeechClient("127.0.0.1:8001") as client:
        stream = client.stream("Hello!", voice="vivian", seed=1)
        for chunk in stream:            # float32 mono chunks at stream.sample_rate, as they are generated
            play(chunk)
        print(stream.summary.audio_seconds)
        audio, rate = client.synthesize("Hello again.", voice="vivian")   # the whole utterance at once

Errors are `SpeechError` with the gRPC status code (INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED, ...).
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import numpy as np

from omni.proto import common_pb2, speech_pb2, speech_pb2_grpc
from omni.services.common.packing import decode_pcm

SAMPLE_FORMATS = {"f32": common_pb2.SAMPLE_FORMAT_PCM_F32LE, "s16": common_pb2.SAMPLE_FORMAT_PCM_S16LE}


class SpeechError(Exception):
    """A refused or failed synthesis; `code` is the gRPC status code."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class SpeechStream:
    """One synthesis in progress: iterate it for float32 audio chunks; `cancel()` stops it server-side."""

    def __init__(self, call, sample_format: int) -> None:
        self._call = call
        self._format = sample_format
        self.request_id = ""
        self.sample_rate = 0
        self.summary: speech_pb2.SynthesisSummary | None = None

    def __iter__(self) -> Iterator[np.ndarray]:
        try:
            for message in self._call:
                kind = message.WhichOneof("kind")
                if kind == "started":
                    self.request_id = message.started.request_id
                    self.sample_rate = message.started.sample_rate
                elif kind == "audio":
                    yield decode_pcm(message.audio.pcm, self._format)
                else:
                    self.summary = message.summary
        except grpc.RpcError as e:
            raise SpeechError(e.code(), e.details() or "") from None

    def cancel(self) -> None:
        self._call.cancel()


class SpeechClient:
    """A channel to one gateway; `api_key` is sent as `authorization: Bearer <key>` when given."""

    def __init__(self, target: str, api_key: str | None = None, timeout_s: float | None = None) -> None:
        self._channel = grpc.insecure_channel(target)
        self._stub = speech_pb2_grpc.SpeechServiceStub(self._channel)
        self._metadata = (("authorization", f"Bearer {api_key}"),) if api_key else ()
        self._timeout_s = timeout_s

    def stream(
        self,
        text: str,
        *,
        voice: str | None = None,
        model: str | None = None,
        task_type: str | None = None,
        language: str | None = None,
        instructions: str | None = None,
        ref_audio: bytes | None = None,
        ref_text: str | None = None,
        x_vector_only_mode: bool = False,
        max_new_tokens: int | None = None,
        ignore_eos: bool = False,
        seed: int | None = None,
        initial_codec_chunk_frames: int | None = None,
        sample_format: str = "f32",
    ) -> SpeechStream:
        """Start a synthesis; the returned stream yields audio as the server produces it."""
        if sample_format not in SAMPLE_FORMATS:
            raise ValueError(f"sample_format must be one of {sorted(SAMPLE_FORMATS)}, got {sample_format!r}")
        request = speech_pb2.SynthesizeRequest(
            input=text,
            voice=voice or "",
            model=model or "",
            task_type=task_type or "",
            language=language or "",
            instructions=instructions or "",
            ref_audio=ref_audio or b"",
            ref_text=ref_text or "",
            x_vector_only_mode=x_vector_only_mode,
            ignore_eos=ignore_eos,
            sample_format=SAMPLE_FORMATS[sample_format],
        )
        for name, value in [
            ("max_new_tokens", max_new_tokens),
            ("seed", None if seed is None else seed % 2**64),
            ("initial_codec_chunk_frames", initial_codec_chunk_frames),
        ]:
            if value is not None:
                setattr(request, name, value)
        call = self._stub.Synthesize(request, metadata=self._metadata, timeout=self._timeout_s)
        return SpeechStream(call, SAMPLE_FORMATS[sample_format])

    def synthesize(self, text: str, **options) -> tuple[np.ndarray, int]:
        """The whole utterance: (float32 mono audio, sample rate)."""
        stream = self.stream(text, **options)
        chunks = list(stream)
        audio = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
        return audio, stream.sample_rate

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> SpeechClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
