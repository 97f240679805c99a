"""Operator settings of the gateway's HTTP layer.

`GatewaySettings` is the flat form read by `services.common.config.load_config` (flags > `OMNI_GATEWAY_*`
environment > deploy profile `gateway:` section > defaults); `GatewayConfig` is what `create_app` uses.
API keys themselves never go in flags or profiles: they come from `api_keys_file` and/or `$OMNI_API_KEYS`.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from omni.services.common.config import ConfigError, option

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


_DEFAULT = GatewayConfig()
_POLICY = RefAudioPolicy()


@dataclass
class GatewaySettings:
    host: str = option("0.0.0.0", "address to bind the HTTP server to")
    port: int = option(8000, "HTTP port")
    workers: int = option(1, "gateway processes sharing the HTTP and gRPC ports (SO_REUSEPORT); 1: this process only")
    log_level: str = option("info", "log level (debug, info, warning, error)")
    http_keep_alive_s: float = option(
        75.0,
        "how long an idle HTTP keep-alive connection stays open, seconds: longer than clients' pool expiry (httpx: "
        "5 s) and load balancers' idle timeouts, so the server does not close a connection a client is about to "
        "reuse (uvicorn's default is 5 s)",
    )
    api_keys_file: str = option("", "file of API keys, one per line (also $OMNI_API_KEYS, comma-separated)")
    max_body_bytes: int = option(_DEFAULT.max_body_bytes, "largest request body, bytes")
    max_input_chars: int = option(_DEFAULT.max_input_chars, "longest `input` text, characters")
    max_instructions_chars: int = option(_DEFAULT.max_instructions_chars, "longest `instructions`, characters")
    max_voice_upload_bytes: int = option(_DEFAULT.max_voice_upload_bytes, "largest voice sample upload, bytes")
    max_uploaded_voices: int = option(_DEFAULT.max_uploaded_voices, "most uploaded voices")
    request_timeout_s: float = option(_DEFAULT.request_timeout_s, "per-request deadline, seconds")
    ref_audio_allow_remote: bool = option(False, "allow http(s):// ref_audio (public addresses only)")
    ref_audio_allowed_domains: list[str] = option([], "if set, remote ref_audio hosts must be in these domains")
    ref_audio_allowed_networks: list[str] = option([], "CIDRs exempt from the private-address block")
    ref_audio_local_roots: list[str] = option([], "directories file:// ref_audio may read from (none: disabled)")
    ref_audio_max_bytes: int = option(_POLICY.max_bytes, "largest reference audio, bytes")
    ref_audio_timeout_s: float = option(_POLICY.timeout_s, "time limit for fetching a remote ref_audio, seconds")


def gateway_config(settings: GatewaySettings) -> GatewayConfig:
    """The app's config from loaded settings (reads the API keys); bad networks or roots are a ConfigError."""
    for net in settings.ref_audio_allowed_networks:
        try:
            ipaddress.ip_network(net, strict=False)
        except ValueError:
            raise ConfigError(f"ref_audio_allowed_networks: {net!r} is not a network (CIDR)") from None
    for root in settings.ref_audio_local_roots:
        if not Path(root).is_dir():
            raise ConfigError(f"ref_audio_local_roots: {root!r} is not a directory")
    policy = dataclasses.replace(
        _POLICY,
        allow_remote=settings.ref_audio_allow_remote,
        allowed_domains=tuple(settings.ref_audio_allowed_domains),
        allowed_networks=tuple(settings.ref_audio_allowed_networks),
        allowed_local_roots=tuple(settings.ref_audio_local_roots),
        max_bytes=settings.ref_audio_max_bytes,
        timeout_s=settings.ref_audio_timeout_s,
    )
    return GatewayConfig(
        api_keys=ApiKeys.load(settings.api_keys_file or None),
        max_body_bytes=settings.max_body_bytes,
        max_input_chars=settings.max_input_chars,
        max_instructions_chars=settings.max_instructions_chars,
        max_voice_upload_bytes=settings.max_voice_upload_bytes,
        max_uploaded_voices=settings.max_uploaded_voices,
        request_timeout_s=settings.request_timeout_s,
        ref_audio=policy,
    )
