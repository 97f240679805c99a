from omni.proto import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StopReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STOP_REASON_UNSPECIFIED: _ClassVar[StopReason]
    STOP_REASON_EOS: _ClassVar[StopReason]
    STOP_REASON_MAX_NEW_TOKENS: _ClassVar[StopReason]
    STOP_REASON_ABORTED: _ClassVar[StopReason]
STOP_REASON_UNSPECIFIED: StopReason
STOP_REASON_EOS: StopReason
STOP_REASON_MAX_NEW_TOKENS: StopReason
STOP_REASON_ABORTED: StopReason

class SamplingParams(_message.Message):
    __slots__ = ("do_sample", "temperature", "top_k", "top_p", "repetition_penalty")
    DO_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    REPETITION_PENALTY_FIELD_NUMBER: _ClassVar[int]
    do_sample: bool
    temperature: float
    top_k: int
    top_p: float
    repetition_penalty: float
    def __init__(self, do_sample: _Optional[bool] = ..., temperature: _Optional[float] = ..., top_k: _Optional[int] = ..., top_p: _Optional[float] = ..., repetition_penalty: _Optional[float] = ...) -> None: ...

class VoiceReference(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class Prompt(_message.Message):
    __slots__ = ("text_ids", "codec_ids", "ref_codes", "ref_code_frames", "x_vector", "voice", "trailing_text_ids")
    TEXT_IDS_FIELD_NUMBER: _ClassVar[int]
    CODEC_IDS_FIELD_NUMBER: _ClassVar[int]
    REF_CODES_FIELD_NUMBER: _ClassVar[int]
    REF_CODE_FRAMES_FIELD_NUMBER: _ClassVar[int]
    X_VECTOR_FIELD_NUMBER: _ClassVar[int]
    VOICE_FIELD_NUMBER: _ClassVar[int]
    TRAILING_TEXT_IDS_FIELD_NUMBER: _ClassVar[int]
    text_ids: _containers.RepeatedScalarFieldContainer[int]
    codec_ids: _containers.RepeatedScalarFieldContainer[int]
    ref_codes: bytes
    ref_code_frames: int
    x_vector: bytes
    voice: VoiceReference
    trailing_text_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, text_ids: _Optional[_Iterable[int]] = ..., codec_ids: _Optional[_Iterable[int]] = ..., ref_codes: _Optional[bytes] = ..., ref_code_frames: _Optional[int] = ..., x_vector: _Optional[bytes] = ..., voice: _Optional[_Union[VoiceReference, _Mapping]] = ..., trailing_text_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class ChunkPlan(_message.Message):
    __slots__ = ("initial_chunk_frames", "chunk_frames", "ramp")
    INITIAL_CHUNK_FRAMES_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FRAMES_FIELD_NUMBER: _ClassVar[int]
    RAMP_FIELD_NUMBER: _ClassVar[int]
    initial_chunk_frames: int
    chunk_frames: int
    ramp: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, initial_chunk_frames: _Optional[int] = ..., chunk_frames: _Optional[int] = ..., ramp: _Optional[_Iterable[int]] = ...) -> None: ...

class GenerateRequest(_message.Message):
    __slots__ = ("request_id", "expected_model", "prompt", "sampling", "subtalker_sampling", "seed", "max_new_tokens", "chunk_plan", "ignore_eos")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_MODEL_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    SAMPLING_FIELD_NUMBER: _ClassVar[int]
    SUBTALKER_SAMPLING_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    MAX_NEW_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_PLAN_FIELD_NUMBER: _ClassVar[int]
    IGNORE_EOS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    expected_model: _common_pb2.ModelIdentity
    prompt: Prompt
    sampling: SamplingParams
    subtalker_sampling: SamplingParams
    seed: int
    max_new_tokens: int
    chunk_plan: ChunkPlan
    ignore_eos: bool
    def __init__(self, request_id: _Optional[str] = ..., expected_model: _Optional[_Union[_common_pb2.ModelIdentity, _Mapping]] = ..., prompt: _Optional[_Union[Prompt, _Mapping]] = ..., sampling: _Optional[_Union[SamplingParams, _Mapping]] = ..., subtalker_sampling: _Optional[_Union[SamplingParams, _Mapping]] = ..., seed: _Optional[int] = ..., max_new_tokens: _Optional[int] = ..., chunk_plan: _Optional[_Union[ChunkPlan, _Mapping]] = ..., ignore_eos: _Optional[bool] = ...) -> None: ...

class GenerateSummary(_message.Message):
    __slots__ = ("num_frames", "num_chunks", "prompt_tokens", "stop_reason", "queue_ms", "time_to_first_chunk_ms", "total_ms")
    NUM_FRAMES_FIELD_NUMBER: _ClassVar[int]
    NUM_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    QUEUE_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_TO_FIRST_CHUNK_MS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MS_FIELD_NUMBER: _ClassVar[int]
    num_frames: int
    num_chunks: int
    prompt_tokens: int
    stop_reason: StopReason
    queue_ms: float
    time_to_first_chunk_ms: float
    total_ms: float
    def __init__(self, num_frames: _Optional[int] = ..., num_chunks: _Optional[int] = ..., prompt_tokens: _Optional[int] = ..., stop_reason: _Optional[_Union[StopReason, str]] = ..., queue_ms: _Optional[float] = ..., time_to_first_chunk_ms: _Optional[float] = ..., total_ms: _Optional[float] = ...) -> None: ...

class GenerateResponse(_message.Message):
    __slots__ = ("chunk", "summary")
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    chunk: _common_pb2.CodecChunk
    summary: GenerateSummary
    def __init__(self, chunk: _Optional[_Union[_common_pb2.CodecChunk, _Mapping]] = ..., summary: _Optional[_Union[GenerateSummary, _Mapping]] = ...) -> None: ...

class GenerateItem(_message.Message):
    __slots__ = ("stream_id", "start", "cancel")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    stream_id: int
    start: GenerateRequest
    cancel: bool
    def __init__(self, stream_id: _Optional[int] = ..., start: _Optional[_Union[GenerateRequest, _Mapping]] = ..., cancel: _Optional[bool] = ...) -> None: ...

class GenerateManyRequest(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[GenerateItem]
    def __init__(self, items: _Optional[_Iterable[_Union[GenerateItem, _Mapping]]] = ...) -> None: ...

class GenerateEvent(_message.Message):
    __slots__ = ("stream_id", "chunk", "summary", "error")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    stream_id: int
    chunk: _common_pb2.CodecChunk
    summary: GenerateSummary
    error: _common_pb2.StreamError
    def __init__(self, stream_id: _Optional[int] = ..., chunk: _Optional[_Union[_common_pb2.CodecChunk, _Mapping]] = ..., summary: _Optional[_Union[GenerateSummary, _Mapping]] = ..., error: _Optional[_Union[_common_pb2.StreamError, _Mapping]] = ...) -> None: ...

class GenerateManyResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[GenerateEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[GenerateEvent, _Mapping]]] = ...) -> None: ...

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
    __slots__ = ("model", "model_type", "num_codebooks", "frame_rate", "max_context", "max_new_tokens")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MODEL_TYPE_FIELD_NUMBER: _ClassVar[int]
    NUM_CODEBOOKS_FIELD_NUMBER: _ClassVar[int]
    FRAME_RATE_FIELD_NUMBER: _ClassVar[int]
    MAX_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    MAX_NEW_TOKENS_FIELD_NUMBER: _ClassVar[int]
    model: _common_pb2.ModelIdentity
    model_type: str
    num_codebooks: int
    frame_rate: float
    max_context: int
    max_new_tokens: int
    def __init__(self, model: _Optional[_Union[_common_pb2.ModelIdentity, _Mapping]] = ..., model_type: _Optional[str] = ..., num_codebooks: _Optional[int] = ..., frame_rate: _Optional[float] = ..., max_context: _Optional[int] = ..., max_new_tokens: _Optional[int] = ...) -> None: ...
