from omni.proto import common_pb2 as _common_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SynthesizeRequest(_message.Message):
    __slots__ = ("request_id", "model", "input", "voice", "task_type", "language", "instructions", "ref_audio", "ref_text", "x_vector_only_mode", "max_new_tokens", "seed", "initial_codec_chunk_frames", "sample_format", "ignore_eos")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    VOICE_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    REF_AUDIO_FIELD_NUMBER: _ClassVar[int]
    REF_TEXT_FIELD_NUMBER: _ClassVar[int]
    X_VECTOR_ONLY_MODE_FIELD_NUMBER: _ClassVar[int]
    MAX_NEW_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    INITIAL_CODEC_CHUNK_FRAMES_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    IGNORE_EOS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    model: str
    input: str
    voice: str
    task_type: str
    language: str
    instructions: str
    ref_audio: bytes
    ref_text: str
    x_vector_only_mode: bool
    max_new_tokens: int
    seed: int
    initial_codec_chunk_frames: int
    sample_format: _common_pb2.SampleFormat
    ignore_eos: bool
    def __init__(self, request_id: _Optional[str] = ..., model: _Optional[str] = ..., input: _Optional[str] = ..., voice: _Optional[str] = ..., task_type: _Optional[str] = ..., language: _Optional[str] = ..., instructions: _Optional[str] = ..., ref_audio: _Optional[bytes] = ..., ref_text: _Optional[str] = ..., x_vector_only_mode: _Optional[bool] = ..., max_new_tokens: _Optional[int] = ..., seed: _Optional[int] = ..., initial_codec_chunk_frames: _Optional[int] = ..., sample_format: _Optional[_Union[_common_pb2.SampleFormat, str]] = ..., ignore_eos: _Optional[bool] = ...) -> None: ...

class SynthesisStarted(_message.Message):
    __slots__ = ("request_id", "sample_rate", "sample_format")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    sample_rate: int
    sample_format: _common_pb2.SampleFormat
    def __init__(self, request_id: _Optional[str] = ..., sample_rate: _Optional[int] = ..., sample_format: _Optional[_Union[_common_pb2.SampleFormat, str]] = ...) -> None: ...

class SynthesisAudio(_message.Message):
    __slots__ = ("pcm", "num_samples")
    PCM_FIELD_NUMBER: _ClassVar[int]
    NUM_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    pcm: bytes
    num_samples: int
    def __init__(self, pcm: _Optional[bytes] = ..., num_samples: _Optional[int] = ...) -> None: ...

class SynthesisSummary(_message.Message):
    __slots__ = ("audio_seconds", "num_frames", "input_tokens", "time_to_first_audio_ms", "total_ms", "stop_reason")
    AUDIO_SECONDS_FIELD_NUMBER: _ClassVar[int]
    NUM_FRAMES_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TIME_TO_FIRST_AUDIO_MS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MS_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    audio_seconds: float
    num_frames: int
    input_tokens: int
    time_to_first_audio_ms: float
    total_ms: float
    stop_reason: str
    def __init__(self, audio_seconds: _Optional[float] = ..., num_frames: _Optional[int] = ..., input_tokens: _Optional[int] = ..., time_to_first_audio_ms: _Optional[float] = ..., total_ms: _Optional[float] = ..., stop_reason: _Optional[str] = ...) -> None: ...

class SynthesizeResponse(_message.Message):
    __slots__ = ("started", "audio", "summary")
    STARTED_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    started: SynthesisStarted
    audio: SynthesisAudio
    summary: SynthesisSummary
    def __init__(self, started: _Optional[_Union[SynthesisStarted, _Mapping]] = ..., audio: _Optional[_Union[SynthesisAudio, _Mapping]] = ..., summary: _Optional[_Union[SynthesisSummary, _Mapping]] = ...) -> None: ...
