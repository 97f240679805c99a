from omni.proto import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EncodeRequest(_message.Message):
    __slots__ = ("request_id", "audio", "voice_name", "want_x_vector")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    VOICE_NAME_FIELD_NUMBER: _ClassVar[int]
    WANT_X_VECTOR_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    audio: bytes
    voice_name: str
    want_x_vector: bool
    def __init__(self, request_id: _Optional[str] = ..., audio: _Optional[bytes] = ..., voice_name: _Optional[str] = ..., want_x_vector: _Optional[bool] = ...) -> None: ...

class EncodeResponse(_message.Message):
    __slots__ = ("ref_codes", "ref_code_frames", "x_vector", "x_vector_dim", "duration_s", "cache_hit", "cache_key", "ref_text")
    REF_CODES_FIELD_NUMBER: _ClassVar[int]
    REF_CODE_FRAMES_FIELD_NUMBER: _ClassVar[int]
    X_VECTOR_FIELD_NUMBER: _ClassVar[int]
    X_VECTOR_DIM_FIELD_NUMBER: _ClassVar[int]
    DURATION_S_FIELD_NUMBER: _ClassVar[int]
    CACHE_HIT_FIELD_NUMBER: _ClassVar[int]
    CACHE_KEY_FIELD_NUMBER: _ClassVar[int]
    REF_TEXT_FIELD_NUMBER: _ClassVar[int]
    ref_codes: bytes
    ref_code_frames: int
    x_vector: bytes
    x_vector_dim: int
    duration_s: float
    cache_hit: bool
    cache_key: str
    ref_text: str
    def __init__(self, ref_codes: _Optional[bytes] = ..., ref_code_frames: _Optional[int] = ..., x_vector: _Optional[bytes] = ..., x_vector_dim: _Optional[int] = ..., duration_s: _Optional[float] = ..., cache_hit: _Optional[bool] = ..., cache_key: _Optional[str] = ..., ref_text: _Optional[str] = ...) -> None: ...

class Voice(_message.Message):
    __slots__ = ("name", "ref_text", "consent_id", "description", "duration_s", "created_unix_ms", "audio_sha256")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REF_TEXT_FIELD_NUMBER: _ClassVar[int]
    CONSENT_ID_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DURATION_S_FIELD_NUMBER: _ClassVar[int]
    CREATED_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    AUDIO_SHA256_FIELD_NUMBER: _ClassVar[int]
    name: str
    ref_text: str
    consent_id: str
    description: str
    duration_s: float
    created_unix_ms: int
    audio_sha256: str
    def __init__(self, name: _Optional[str] = ..., ref_text: _Optional[str] = ..., consent_id: _Optional[str] = ..., description: _Optional[str] = ..., duration_s: _Optional[float] = ..., created_unix_ms: _Optional[int] = ..., audio_sha256: _Optional[str] = ...) -> None: ...

class RegisterVoiceRequest(_message.Message):
    __slots__ = ("name", "audio", "ref_text", "consent_id", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    REF_TEXT_FIELD_NUMBER: _ClassVar[int]
    CONSENT_ID_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    audio: bytes
    ref_text: str
    consent_id: str
    description: str
    def __init__(self, name: _Optional[str] = ..., audio: _Optional[bytes] = ..., ref_text: _Optional[str] = ..., consent_id: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class RegisterVoiceResponse(_message.Message):
    __slots__ = ("voice",)
    VOICE_FIELD_NUMBER: _ClassVar[int]
    voice: Voice
    def __init__(self, voice: _Optional[_Union[Voice, _Mapping]] = ...) -> None: ...

class ListVoicesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListVoicesResponse(_message.Message):
    __slots__ = ("voices",)
    VOICES_FIELD_NUMBER: _ClassVar[int]
    voices: _containers.RepeatedCompositeFieldContainer[Voice]
    def __init__(self, voices: _Optional[_Iterable[_Union[Voice, _Mapping]]] = ...) -> None: ...

class GetVoiceRequest(_message.Message):
    __slots__ = ("name", "include_audio")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_AUDIO_FIELD_NUMBER: _ClassVar[int]
    name: str
    include_audio: bool
    def __init__(self, name: _Optional[str] = ..., include_audio: _Optional[bool] = ...) -> None: ...

class GetVoiceResponse(_message.Message):
    __slots__ = ("voice", "audio")
    VOICE_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    voice: Voice
    audio: bytes
    def __init__(self, voice: _Optional[_Union[Voice, _Mapping]] = ..., audio: _Optional[bytes] = ...) -> None: ...

class DeleteVoiceRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteVoiceResponse(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetModelInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetModelInfoResponse(_message.Message):
    __slots__ = ("model", "encoder_fingerprint", "sample_rate")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ENCODER_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    model: _common_pb2.ModelIdentity
    encoder_fingerprint: str
    sample_rate: int
    def __init__(self, model: _Optional[_Union[_common_pb2.ModelIdentity, _Mapping]] = ..., encoder_fingerprint: _Optional[str] = ..., sample_rate: _Optional[int] = ...) -> None: ...
