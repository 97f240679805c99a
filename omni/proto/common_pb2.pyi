from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProtocolVersion(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROTOCOL_VERSION_UNSPECIFIED: _ClassVar[ProtocolVersion]
    PROTOCOL_VERSION_1: _ClassVar[ProtocolVersion]

class SampleFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SAMPLE_FORMAT_UNSPECIFIED: _ClassVar[SampleFormat]
    SAMPLE_FORMAT_PCM_S16LE: _ClassVar[SampleFormat]
    SAMPLE_FORMAT_PCM_F32LE: _ClassVar[SampleFormat]
PROTOCOL_VERSION_UNSPECIFIED: ProtocolVersion
PROTOCOL_VERSION_1: ProtocolVersion
SAMPLE_FORMAT_UNSPECIFIED: SampleFormat
SAMPLE_FORMAT_PCM_S16LE: SampleFormat
SAMPLE_FORMAT_PCM_F32LE: SampleFormat

class ModelIdentity(_message.Message):
    __slots__ = ("model_family", "model_name", "checkpoint_revision", "checkpoint_fingerprint", "codec_id", "protocol_version")
    MODEL_FAMILY_FIELD_NUMBER: _ClassVar[int]
    MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_REVISION_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    CODEC_ID_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    model_family: str
    model_name: str
    checkpoint_revision: str
    checkpoint_fingerprint: str
    codec_id: str
    protocol_version: ProtocolVersion
    def __init__(self, model_family: _Optional[str] = ..., model_name: _Optional[str] = ..., checkpoint_revision: _Optional[str] = ..., checkpoint_fingerprint: _Optional[str] = ..., codec_id: _Optional[str] = ..., protocol_version: _Optional[_Union[ProtocolVersion, str]] = ...) -> None: ...

class ChunkTiming(_message.Message):
    __slots__ = ("emitted_unix_nanos", "compute_ms", "queue_ms")
    EMITTED_UNIX_NANOS_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_MS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_MS_FIELD_NUMBER: _ClassVar[int]
    emitted_unix_nanos: int
    compute_ms: float
    queue_ms: float
    def __init__(self, emitted_unix_nanos: _Optional[int] = ..., compute_ms: _Optional[float] = ..., queue_ms: _Optional[float] = ...) -> None: ...

class CodecChunk(_message.Message):
    __slots__ = ("codes", "num_frames", "num_codebooks", "first_frame_index", "first", "last", "timing")
    CODES_FIELD_NUMBER: _ClassVar[int]
    NUM_FRAMES_FIELD_NUMBER: _ClassVar[int]
    NUM_CODEBOOKS_FIELD_NUMBER: _ClassVar[int]
    FIRST_FRAME_INDEX_FIELD_NUMBER: _ClassVar[int]
    FIRST_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    codes: bytes
    num_frames: int
    num_codebooks: int
    first_frame_index: int
    first: bool
    last: bool
    timing: ChunkTiming
    def __init__(self, codes: _Optional[bytes] = ..., num_frames: _Optional[int] = ..., num_codebooks: _Optional[int] = ..., first_frame_index: _Optional[int] = ..., first: _Optional[bool] = ..., last: _Optional[bool] = ..., timing: _Optional[_Union[ChunkTiming, _Mapping]] = ...) -> None: ...

class Load(_message.Message):
    __slots__ = ("active_streams", "capacity", "queue_depth", "queue_capacity", "accepting")
    ACTIVE_STREAMS_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_DEPTH_FIELD_NUMBER: _ClassVar[int]
    QUEUE_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    ACCEPTING_FIELD_NUMBER: _ClassVar[int]
    active_streams: int
    capacity: int
    queue_depth: int
    queue_capacity: int
    accepting: bool
    def __init__(self, active_streams: _Optional[int] = ..., capacity: _Optional[int] = ..., queue_depth: _Optional[int] = ..., queue_capacity: _Optional[int] = ..., accepting: _Optional[bool] = ...) -> None: ...

class StreamError(_message.Message):
    __slots__ = ("code", "message", "retry_after_ms")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    retry_after_ms: int
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., retry_after_ms: _Optional[int] = ...) -> None: ...
