from omni.proto import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DecodeOpen(_message.Message):
    __slots__ = ("request_id", "model", "sample_format", "ref_codes", "ref_code_frames")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    REF_CODES_FIELD_NUMBER: _ClassVar[int]
    REF_CODE_FRAMES_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    model: _common_pb2.ModelIdentity
    sample_format: _common_pb2.SampleFormat
    ref_codes: bytes
    ref_code_frames: int
    def __init__(self, request_id: _Optional[str] = ..., model: _Optional[_Union[_common_pb2.ModelIdentity, _Mapping]] = ..., sample_format: _Optional[_Union[_common_pb2.SampleFormat, str]] = ..., ref_codes: _Optional[bytes] = ..., ref_code_frames: _Optional[int] = ...) -> None: ...

class DecodeRequest(_message.Message):
    __slots__ = ("open", "chunk")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    open: DecodeOpen
    chunk: _common_pb2.CodecChunk
    def __init__(self, open: _Optional[_Union[DecodeOpen, _Mapping]] = ..., chunk: _Optional[_Union[_common_pb2.CodecChunk, _Mapping]] = ...) -> None: ...

class DecodeStarted(_message.Message):
    __slots__ = ("model", "sample_rate", "samples_per_frame", "max_backlog_frames")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_PER_FRAME_FIELD_NUMBER: _ClassVar[int]
    MAX_BACKLOG_FRAMES_FIELD_NUMBER: _ClassVar[int]
    model: _common_pb2.ModelIdentity
    sample_rate: int
    samples_per_frame: int
    max_backlog_frames: int
    def __init__(self, model: _Optional[_Union[_common_pb2.ModelIdentity, _Mapping]] = ..., sample_rate: _Optional[int] = ..., samples_per_frame: _Optional[int] = ..., max_backlog_frames: _Optional[int] = ...) -> None: ...

class AudioChunk(_message.Message):
    __slots__ = ("pcm", "num_samples", "first_sample_index", "first_frame_index", "num_frames", "last", "timing")
    PCM_FIELD_NUMBER: _ClassVar[int]
    NUM_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    FIRST_SAMPLE_INDEX_FIELD_NUMBER: _ClassVar[int]
    FIRST_FRAME_INDEX_FIELD_NUMBER: _ClassVar[int]
    NUM_FRAMES_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    pcm: bytes
    num_samples: int
    first_sample_index: int
    first_frame_index: int
    num_frames: int
    last: bool
    timing: _common_pb2.ChunkTiming
    def __init__(self, pcm: _Optional[bytes] = ..., num_samples: _Optional[int] = ..., first_sample_index: _Optional[int] = ..., first_frame_index: _Optional[int] = ..., num_frames: _Optional[int] = ..., last: _Optional[bool] = ..., timing: _Optional[_Union[_common_pb2.ChunkTiming, _Mapping]] = ...) -> None: ...

class DecodeSummary(_message.Message):
    __slots__ = ("num_frames", "num_samples", "audio_seconds", "num_chunks", "total_ms")
    NUM_FRAMES_FIELD_NUMBER: _ClassVar[int]
    NUM_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    AUDIO_SECONDS_FIELD_NUMBER: _ClassVar[int]
    NUM_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MS_FIELD_NUMBER: _ClassVar[int]
    num_frames: int
    num_samples: int
    audio_seconds: float
    num_chunks: int
    total_ms: float
    def __init__(self, num_frames: _Optional[int] = ..., num_samples: _Optional[int] = ..., audio_seconds: _Optional[float] = ..., num_chunks: _Optional[int] = ..., total_ms: _Optional[float] = ...) -> None: ...

class DecodeResponse(_message.Message):
    __slots__ = ("started", "audio", "summary")
    STARTED_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    started: DecodeStarted
    audio: AudioChunk
    summary: DecodeSummary
    def __init__(self, started: _Optional[_Union[DecodeStarted, _Mapping]] = ..., audio: _Optional[_Union[AudioChunk, _Mapping]] = ..., summary: _Optional[_Union[DecodeSummary, _Mapping]] = ...) -> None: ...

class StreamRequest(_message.Message):
    __slots__ = ("stream_id", "open", "chunk", "end", "cancel")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    stream_id: int
    open: DecodeOpen
    chunk: _common_pb2.CodecChunk
    end: bool
    cancel: bool
    def __init__(self, stream_id: _Optional[int] = ..., open: _Optional[_Union[DecodeOpen, _Mapping]] = ..., chunk: _Optional[_Union[_common_pb2.CodecChunk, _Mapping]] = ..., end: _Optional[bool] = ..., cancel: _Optional[bool] = ...) -> None: ...

class DecodeManyRequest(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[StreamRequest]
    def __init__(self, items: _Optional[_Iterable[_Union[StreamRequest, _Mapping]]] = ...) -> None: ...

class StreamEvent(_message.Message):
    __slots__ = ("stream_id", "started", "audio", "summary", "error")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    stream_id: int
    started: DecodeStarted
    audio: AudioChunk
    summary: DecodeSummary
    error: _common_pb2.StreamError
    def __init__(self, stream_id: _Optional[int] = ..., started: _Optional[_Union[DecodeStarted, _Mapping]] = ..., audio: _Optional[_Union[AudioChunk, _Mapping]] = ..., summary: _Optional[_Union[DecodeSummary, _Mapping]] = ..., error: _Optional[_Union[_common_pb2.StreamError, _Mapping]] = ...) -> None: ...

class DecodeManyResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[StreamEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[StreamEvent, _Mapping]]] = ...) -> None: ...

class GetLoadRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetLoadResponse(_message.Message):
    __slots__ = ("load",)
    LOAD_FIELD_NUMBER: _ClassVar[int]
    load: _common_pb2.Load
    def __init__(self, load: _Optional[_Union[_common_pb2.Load, _Mapping]] = ...) -> None: ...

class GetModelInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetModelInfoResponse(_message.Message):
    __slots__ = ("model", "sample_rate", "samples_per_frame", "num_codebooks", "codebook_size")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_PER_FRAME_FIELD_NUMBER: _ClassVar[int]
    NUM_CODEBOOKS_FIELD_NUMBER: _ClassVar[int]
    CODEBOOK_SIZE_FIELD_NUMBER: _ClassVar[int]
    model: _common_pb2.ModelIdentity
    sample_rate: int
    samples_per_frame: int
    num_codebooks: int
    codebook_size: int
    def __init__(self, model: _Optional[_Union[_common_pb2.ModelIdentity, _Mapping]] = ..., sample_rate: _Optional[int] = ..., samples_per_frame: _Optional[int] = ..., num_codebooks: _Optional[int] = ..., codebook_size: _Optional[int] = ...) -> None: ...
