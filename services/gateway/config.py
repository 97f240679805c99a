"""Operator settings of the gateway's HTTP layer."""

from __future__ import annotations

from dataclasses import dataclass, field

from .auth import ApiKeys
from .ref_audio import RefAudioPolicy


@dataclass(frozen=True)
class GatewayConfig:
    api_keys: ApiKeys = field(default_factory=lambda: ApiKeys([]))
    max_body_bytes: int = 16 * 1024 * 1024  # whole request body (a data: URI reference or a voice upload)
    max_input_chars: int = 4096  # OpenAI's limit for `input`
    max_instructions_chars: int = 500  # vLLM-Omni's default for Qwen3-TTS
    max_voice_upload_bytes: int = 10 * 1024 * 1024
    max_uploaded_voices: int = 1000
    request_timeout_s: float = 300.0  # per-request deadline, from arrival to the last audio byte
    ref_audio: RefAudioPolicy = field(default_factory=RefAudioPolicy)
