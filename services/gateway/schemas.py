"""Request and response bodies of the HTTP API, with vLLM-Omni's field names, defaults and bounds.

Unknown fields are ignored (vLLM-Omni's schema is permissive, and the OpenAI SDK may send fields a given
server does not use). Limits that depend on the deployment (text length, served models, voices) are
checked by `resolve.py`, not here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

ResponseFormat = Literal["wav", "pcm", "flac", "mp3", "opus"]
STREAMABLE_FORMATS = ("pcm", "wav")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
VOICE_ID_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}


class ExtraParams(BaseModel):
    """Sampling overrides for the talker (vLLM-Omni copies these into the stage-0 sampling params)."""

    model_config = ConfigDict(extra="ignore")

    temperature: float | None = Field(None, ge=0.0, le=10.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    top_k: int | None = Field(None, ge=-1, le=100_000)

    @field_validator("top_k")
    @classmethod
    def _top_k_not_zero(cls, v: int | None) -> int | None:
        if v == 0:
            raise ValueError("top_k must be -1 (disabled) or at least 1")
        return v


class SpeechRequest(BaseModel):
    """`POST /v1/audio/speech` body: OpenAI's fields plus the vLLM-Omni extensions."""

    model_config = ConfigDict(extra="ignore")

    input: str = Field(..., description="Text to speak.")
    model: str | None = Field(None, description="Served model id; the first served model when omitted.")
    voice: str | None = Field(
        None,
        validation_alias=AliasChoices("voice", "speaker"),
        description='Built-in speaker or uploaded voice (case-insensitive); also `{"id": name}`.',
        json_schema_extra={"anyOf": [{"type": "string"}, VOICE_ID_SCHEMA, {"type": "null"}]},
    )
    instructions: str | None = Field(None, description="Style / emotion instruction (VoiceDesign description).")
    response_format: ResponseFormat = "wav"
    sample_rate: int | None = Field(None, gt=0, description="Output rate; one of the model's supported rates.")
    speed: float = Field(1.0, ge=0.25, le=4.0)
    stream: bool = Field(False, description="Stream the audio; without stream_format this selects SSE.")
    stream_format: Literal["sse", "audio"] | None = Field(
        None, description="`audio`: raw chunked bytes; `sse`: speech.audio.* events. Streams need pcm or wav."
    )
    task_type: Literal["CustomVoice", "VoiceDesign", "Base"] | None = None
    language: str | None = None
    ref_audio: str | None = Field(
        None, description="Reference audio for cloning: data: URI (or http(s)/file:// when enabled)."
    )
    ref_text: str | None = Field(None, description="Transcript of ref_audio (Base, in-context cloning).")
    x_vector_only_mode: bool | None = None
    speaker_embedding: list[float] | None = Field(None, max_length=8192)
    max_new_tokens: int | None = Field(None, ge=1, le=4096)
    ignore_eos: bool = Field(False, description="Never stop at end of speech: exactly max_new_tokens - 1 frames.")
    seed: int | None = Field(None, ge=INT64_MIN, le=INT64_MAX)
    initial_codec_chunk_frames: int | None = Field(None, ge=0, le=4096)
    non_streaming_mode: bool | None = None
    extra_params: ExtraParams | None = None

    @field_validator("voice", mode="before")
    @classmethod
    def _voice_id(cls, v: Any) -> Any:
        if isinstance(v, dict):  # the OpenAI SDK's custom-voice form {"id": "..."}
            if set(v) != {"id"}:
                raise ValueError('voice object must be {"id": "<name>"}')
            return v["id"]
        return v

    @field_validator("voice")
    @classmethod
    def _voice_lower(cls, v: str | None) -> str | None:
        return v.strip().lower() if v is not None else None

    @property
    def stream_mode(self) -> Literal["none", "audio", "sse"]:
        if self.stream_format is not None:
            return self.stream_format
        return "sse" if self.stream else "none"


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "omni"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class UploadedVoice(BaseModel):
    name: str
    consent: str
    created_at: int
    file_size: int
    mime_type: str
    ref_text: str | None = None
    speaker_description: str | None = None


class VoiceList(BaseModel):
    voices: list[str] = Field(description="Every name a request may use as `voice`, sorted, including 'default'.")
    uploaded_voices: list[UploadedVoice]


class VoiceCreated(BaseModel):
    success: bool = True
    voice: UploadedVoice


class VoiceDeleted(BaseModel):
    success: bool = True
    name: str


class ErrorInfo(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: int


class ErrorResponse(BaseModel):
    error: ErrorInfo


class HealthStatus(BaseModel):
    status: str
