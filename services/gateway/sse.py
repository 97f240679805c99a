"""Server-sent events of a streamed speech response: `speech.audio.delta`, `speech.audio.done`, `speech.audio.error`.

Each event is `event: <type>` plus one `data:` line of JSON whose `type` repeats the event name, as in OpenAI's
and vLLM-Omni's speech streaming.
"""

from __future__ import annotations

import base64
import json

from .backend import Usage
from .errors import error_body

MEDIA_TYPE = "text/event-stream"


def _event(kind: str, payload: dict) -> bytes:
    data = json.dumps({"type": kind, **payload}, separators=(",", ":"))
    return f"event: {kind}\ndata: {data}\n\n".encode()


def delta_event(audio: bytes, response_format: str) -> bytes:
    """One chunk of encoded audio (s16le PCM; for wav the first delta starts with the stream header)."""
    return _event("speech.audio.delta", {"audio": base64.b64encode(audio).decode(), "response_format": response_format})


def usage_dict(usage: Usage) -> dict:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "input_token_details": {"text_tokens": usage.input_text_tokens, "audio_tokens": usage.input_audio_tokens},
    }


def done_event(usage: Usage) -> bytes:
    return _event("speech.audio.done", {"usage": usage_dict(usage)})


def error_event(status: int, message: str, partial_audio: bool) -> bytes:
    """The stream failed; if audio was already sent the client should discard it."""
    payload = error_body(status, message)
    if partial_audio:
        payload["error"]["partial_audio"] = True
        payload["error"]["action"] = "discard"
    return _event("speech.audio.error", payload)
