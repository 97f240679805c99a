"""GenerateRequest (wire) <-> engine inputs: validation with messages fit for INVALID_ARGUMENT.

`prompt_from_proto` turns the wire prompt (ids with sentinels, packed ref codes and x-vector) into a
TalkerPrompt; `prompt_to_proto` is its inverse, for clients that build prompts with omni.talker.prompt.
"""

import math
import secrets
from dataclasses import dataclass

import numpy as np
import torch
from omni.services.common.packing import PackingError, pack_codes, pack_vector, unpack_codes, unpack_vector

from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.proto import talker_pb2
from omni.talker.engine import ChunkPlan
from omni.talker.prompt import NO_ID, TalkerPrompt
from omni.talker.sampling import SamplingParams

X_VECTOR_SLOT = -2  # codec-track sentinel: the x-vector goes here
REF_CODE_ROW = -3  # codec-track sentinel: the next row of ref_codes goes here
MAX_RAMP = 16


class InvalidRequest(ValueError):
    """A malformed request; the message names the field."""


class UnsupportedRequest(ValueError):
    """A well-formed request this talker cannot serve (e.g. a registered voice without a reference encoder)."""


@dataclass(frozen=True)
class RequestLimits:
    max_context: int
    default_max_new_tokens: int
    max_new_tokens: int
    max_chunk_frames: int
    default_plan: ChunkPlan


def _ids(values, low: int, high: int, name: str) -> np.ndarray:
    ids = np.asarray(values, dtype=np.int64)
    bad = (ids < low) | (ids >= high)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidRequest(f"{name}[{i}] = {ids[i]} is outside [{low}, {high})")
    return ids


def prompt_from_proto(prompt: talker_pb2.Prompt, config: Qwen3TTSConfig, max_context: int) -> TalkerPrompt:
    t = config.talker
    length = len(prompt.text_ids)
    if length == 0:
        raise InvalidRequest("prompt.text_ids is empty")
    if len(prompt.codec_ids) != length:
        raise InvalidRequest(f"prompt has {length} text_ids but {len(prompt.codec_ids)} codec_ids")
    if length > max_context:
        raise InvalidRequest(f"prompt length {length} exceeds the context limit {max_context}")
    text = _ids(prompt.text_ids, NO_ID, t.text_vocab_size, "prompt.text_ids")
    codec = _ids(prompt.codec_ids, REF_CODE_ROW, t.vocab_size, "prompt.codec_ids")
    trailing = _ids(prompt.trailing_text_ids, 0, t.text_vocab_size, "prompt.trailing_text_ids")
    if len(trailing) > max_context:
        raise InvalidRequest(f"prompt.trailing_text_ids has {len(trailing)} ids, more than the context {max_context}")

    x_vector, x_vector_pos = None, NO_ID
    slots = np.flatnonzero(codec == X_VECTOR_SLOT)
    speaker = prompt.WhichOneof("speaker")
    if speaker == "voice":
        raise UnsupportedRequest("prompt.voice: this talker resolves no registered voices; send prompt.x_vector")
    if len(slots) > 1:
        raise InvalidRequest(f"prompt.codec_ids has {len(slots)} x-vector slots (-2); at most one is allowed")
    if len(slots) == 1:
        if speaker != "x_vector":
            raise InvalidRequest("prompt.codec_ids has an x-vector slot (-2) but prompt.x_vector is not set")
        try:
            x_vector = torch.from_numpy(unpack_vector(prompt.x_vector, t.hidden_size).copy())
        except PackingError as e:
            raise InvalidRequest(f"prompt.x_vector: {e}") from None
        x_vector_pos = int(slots[0])
    elif speaker is not None:
        raise InvalidRequest("prompt.x_vector is set but prompt.codec_ids has no x-vector slot (-2)")

    ref_codes, ref_codes_pos = None, NO_ID
    rows = np.flatnonzero(codec == REF_CODE_ROW)
    if len(rows) != prompt.ref_code_frames:
        raise InvalidRequest(
            f"prompt has {len(rows)} ref-code positions (-3) but ref_code_frames = {prompt.ref_code_frames}"
        )
    if len(rows):
        if rows[-1] - rows[0] != len(rows) - 1:
            raise InvalidRequest("prompt.codec_ids: the ref-code positions (-3) must be consecutive")
        try:
            codes = unpack_codes(prompt.ref_codes, len(rows), t.num_code_groups, config.code_predictor.vocab_size)
        except PackingError as e:
            raise InvalidRequest(f"prompt.ref_codes: {e}") from None
        ref_codes, ref_codes_pos = torch.from_numpy(codes), int(rows[0])
    elif prompt.ref_codes:
        raise InvalidRequest("prompt.ref_codes is set but ref_code_frames is 0")

    codec[codec < NO_ID] = NO_ID  # the sentinel positions take their vectors from x_vector / ref_codes
    return TalkerPrompt(
        text_ids=torch.from_numpy(text),
        codec_ids=torch.from_numpy(codec),
        trailing_ids=torch.from_numpy(trailing),
        x_vector=x_vector,
        x_vector_pos=x_vector_pos,
        ref_codes=ref_codes,
        ref_codes_pos=ref_codes_pos,
    )


def prompt_to_proto(prompt: TalkerPrompt) -> talker_pb2.Prompt:
    """The wire form of a TalkerPrompt (sentinels at the x-vector and ref-code positions)."""
    codec = prompt.codec_ids.clone()
    out = talker_pb2.Prompt(text_ids=prompt.text_ids.tolist(), trailing_text_ids=prompt.trailing_ids.tolist())
    if prompt.x_vector is not None:
        codec[prompt.x_vector_pos] = X_VECTOR_SLOT
        out.x_vector = pack_vector(prompt.x_vector.float().numpy())
    if prompt.ref_codes is not None:
        rows = prompt.ref_codes.shape[0]
        codec[prompt.ref_codes_pos : prompt.ref_codes_pos + rows] = REF_CODE_ROW
        out.ref_codes = pack_codes(prompt.ref_codes.numpy(), prompt.ref_codes.shape[1])
        out.ref_code_frames = rows
    out.codec_ids.extend(codec.tolist())
    return out


def _sampling_overrides(s: talker_pb2.SamplingParams, prefix: str, name: str) -> dict:
    """Proto sampling fields -> SamplingParams overrides (`prefix` "" for the talker, "subtalker_")."""
    out = {}
    for field in ("temperature", "top_p", "repetition_penalty"):
        if s.HasField(field):
            value = getattr(s, field)
            if not math.isfinite(value):
                raise InvalidRequest(f"{name}.{field} must be finite, got {value}")
            out[field] = value
    if s.HasField("top_k"):
        out["top_k"] = s.top_k
    if s.HasField("do_sample"):
        out["do_sample"] = s.do_sample
    if prefix:
        penalty = out.pop("repetition_penalty", 1.0)
        if penalty != 1.0:
            raise InvalidRequest(f"{name}.repetition_penalty is not supported by the code predictor (leave it unset)")
        out = {("subtalker_dosample" if k == "do_sample" else prefix + k): v for k, v in out.items()}
    return out


def sampling_from_proto(request: talker_pb2.GenerateRequest, generation, max_new_tokens: int) -> SamplingParams:
    overrides = {
        **_sampling_overrides(request.sampling, "", "sampling"),
        **_sampling_overrides(request.subtalker_sampling, "subtalker_", "subtalker_sampling"),
    }
    if request.ignore_eos:  # EOS stays blocked through the last draw: exactly max_new_tokens - 1 frames
        overrides["min_new_tokens"] = max_new_tokens
    seed = request.seed if request.HasField("seed") else secrets.randbits(63)
    try:
        return SamplingParams.from_generation_config(generation, seed=seed, max_new_tokens=max_new_tokens, **overrides)
    except ValueError as e:
        raise InvalidRequest(f"sampling: {e}") from None


def chunk_plan_from_proto(plan: talker_pb2.ChunkPlan, limits: RequestLimits) -> ChunkPlan:
    default = limits.default_plan
    if len(plan.ramp) > MAX_RAMP:
        raise InvalidRequest(f"chunk_plan.ramp has {len(plan.ramp)} sizes, at most {MAX_RAMP}")
    for name, size in [("initial_chunk_frames", plan.initial_chunk_frames), ("chunk_frames", plan.chunk_frames)]:
        if size > limits.max_chunk_frames:
            raise InvalidRequest(f"chunk_plan.{name} = {size} exceeds the maximum {limits.max_chunk_frames}")
    for size in plan.ramp:
        if not 1 <= size <= limits.max_chunk_frames:
            raise InvalidRequest(f"chunk_plan.ramp sizes must be in [1, {limits.max_chunk_frames}], got {size}")
    return ChunkPlan(
        initial=plan.initial_chunk_frames or default.initial,
        steady=plan.chunk_frames or default.steady,
        ramp=tuple(plan.ramp) if plan.ramp else default.ramp,
    )


def max_new_tokens_for(request: talker_pb2.GenerateRequest, prompt_tokens: int, limits: RequestLimits) -> int:
    """The request's value (checked against the service maximum and the context) or the default, capped to fit."""
    if request.max_new_tokens:
        if request.max_new_tokens > limits.max_new_tokens:
            raise InvalidRequest(f"max_new_tokens {request.max_new_tokens} exceeds the maximum {limits.max_new_tokens}")
        if prompt_tokens + request.max_new_tokens > limits.max_context:
            raise InvalidRequest(
                f"prompt length {prompt_tokens} + max_new_tokens {request.max_new_tokens} exceeds the context limit "
                f"{limits.max_context}"
            )
        return request.max_new_tokens
    room = limits.max_context - prompt_tokens
    if room < 2:
        raise InvalidRequest(f"prompt length {prompt_tokens} leaves no room to generate within {limits.max_context}")
    return min(limits.default_max_new_tokens, room)
