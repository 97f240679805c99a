"""A parsed `SpeechRequest` → a `SynthesisRequest` for the backend: deployment limits, the model, the task type,
the voice and the reference audio, each failing with a 400 (404 for an unknown model) that names the field.

Follows vLLM-Omni's Qwen3-TTS rules: the task type is inferred as Base when cloning input is given, and must
match the checkpoint variant; ref_text belongs to Base; Base needs reference audio, an uploaded voice or a
speaker embedding, and ref_text unless x_vector_only_mode; VoiceDesign needs instructions.
"""

from __future__ import annotations

import math

from .backend import ModelInfo, SynthesisRequest, VoiceInfo
from .config import GatewayConfig
from .errors import APIError, bad_request
from .ref_audio import resolve_ref_audio
from .schemas import STREAMABLE_FORMATS, SpeechRequest
from .tempo import tempo_available


def pick_model(models: list[ModelInfo], name: str | None) -> ModelInfo:
    if not models:
        raise APIError(503, "no model is being served yet")
    if name is None:
        return models[0]
    for info in models:
        if info.id == name:
            return info
    served = ", ".join(m.id for m in models)
    raise APIError(404, f"model {name!r} does not exist; served models: {served}", "model")


def _check_limits(req: SpeechRequest, model: ModelInfo, config: GatewayConfig) -> str:
    text = req.input.strip()
    if not text:
        raise bad_request("input: text cannot be empty", "input")
    if len(req.input) > config.max_input_chars:
        raise bad_request(f"input: at most {config.max_input_chars} characters, got {len(req.input)}", "input")
    if req.instructions is not None and len(req.instructions) > config.max_instructions_chars:
        raise bad_request(f"instructions: at most {config.max_instructions_chars} characters", "instructions")
    if req.stream_mode != "none" and req.response_format not in STREAMABLE_FORMATS:
        raise bad_request(
            f"response_format: streaming supports pcm or wav, not {req.response_format!r}; "
            "set stream=false or pick pcm/wav",
            "response_format",
        )
    if req.speed != 1.0 and req.stream_mode != "none":
        raise bad_request("speed: streaming needs speed 1.0 (tempo is changed on the whole utterance)", "speed")
    if req.speed != 1.0 and not tempo_available():
        raise bad_request("speed: only 1.0 is available on this server (ffmpeg is not installed)", "speed")
    if req.sample_rate is not None and req.sample_rate not in model.output_sample_rates:
        rates = ", ".join(str(r) for r in model.output_sample_rates)
        raise bad_request(f"sample_rate: {req.sample_rate} is not supported; supported: {rates}", "sample_rate")
    if req.max_new_tokens is not None and req.max_new_tokens > model.max_new_tokens:
        raise bad_request(f"max_new_tokens: at most {model.max_new_tokens} for this model", "max_new_tokens")
    return text


def _language(req: SpeechRequest, model: ModelInfo) -> str:
    if req.language is None:
        return "Auto"
    language = req.language.strip().title()
    if language not in model.languages:
        raise bad_request(
            f"language: {req.language!r} is not supported; supported: {', '.join(model.languages)}", "language"
        )
    return language


def _voice(req: SpeechRequest, model: ModelInfo, uploaded: list[VoiceInfo]) -> tuple[str | None, bool]:
    """(voice name or None for the model default, whether it is an uploaded voice)."""
    if req.voice is None or req.voice in ("", "default"):
        return None, False
    if req.voice in {v.name for v in uploaded}:
        return req.voice, True
    if req.voice in model.speakers:
        return req.voice, False
    valid = sorted({"default", *model.speakers, *(v.name for v in uploaded)})
    raise bad_request(f"voice: unknown voice {req.voice!r}; valid voices: {', '.join(valid)}", "voice")


def _task_type(req: SpeechRequest, model: ModelInfo, is_uploaded: bool) -> str:
    clones = req.ref_audio is not None or req.ref_text is not None or req.speaker_embedding is not None
    task = req.task_type or ("Base" if clones or is_uploaded else model.task_type)
    if task != model.task_type:
        raise bad_request(
            f"task_type: {task} is not supported by model {model.id!r}, a {model.task_type} checkpoint", "task_type"
        )
    return task


def _check_task_inputs(req: SpeechRequest, model: ModelInfo, task: str, voice: str | None, is_uploaded: bool) -> None:
    if task != "Base":
        for name in ("ref_audio", "ref_text", "speaker_embedding"):
            if getattr(req, name) is not None:
                raise bad_request(f"{name}: only valid with task_type Base (voice cloning)", name)
    if task == "CustomVoice" and voice is None and model.default_speaker is None:
        raise bad_request("voice: required for this model", "voice")
    if task == "VoiceDesign" and not (req.instructions or "").strip():
        raise bad_request("instructions: required for VoiceDesign (describe the voice)", "instructions")
    if task != "Base":
        return
    if req.ref_audio is not None and req.speaker_embedding is not None:
        raise bad_request("speaker_embedding: cannot be combined with ref_audio", "speaker_embedding")
    if req.ref_audio is None and req.speaker_embedding is None and not is_uploaded:
        raise bad_request("ref_audio: Base needs ref_audio, speaker_embedding or an uploaded voice", "ref_audio")
    if req.ref_audio is not None and not req.x_vector_only_mode and not (req.ref_text or "").strip():
        raise bad_request("ref_text: required with ref_audio unless x_vector_only_mode is true", "ref_text")
    if req.speaker_embedding is not None:
        if model.speaker_embedding_dim is None:
            raise bad_request("speaker_embedding: not accepted by this model", "speaker_embedding")
        if len(req.speaker_embedding) != model.speaker_embedding_dim:
            raise bad_request(
                f"speaker_embedding: length must be {model.speaker_embedding_dim}, got {len(req.speaker_embedding)}",
                "speaker_embedding",
            )
        if not all(math.isfinite(x) for x in req.speaker_embedding):
            raise bad_request("speaker_embedding: values must be finite", "speaker_embedding")


async def resolve_request(
    req: SpeechRequest, models: list[ModelInfo], uploaded: list[VoiceInfo], config: GatewayConfig, request_id: str
) -> tuple[ModelInfo, SynthesisRequest]:
    model = pick_model(models, req.model)
    text = _check_limits(req, model, config)
    language = _language(req, model)
    voice, is_uploaded = _voice(req, model, uploaded)
    task = _task_type(req, model, is_uploaded)
    _check_task_inputs(req, model, task, voice, is_uploaded)
    ref_audio = await resolve_ref_audio(req.ref_audio, config.ref_audio) if req.ref_audio is not None else None
    sampling = req.extra_params.model_dump(exclude_none=True) if req.extra_params else {}
    synthesis = SynthesisRequest(
        model=model.id,
        text=text,
        task_type=task,  # type: ignore[arg-type]
        language=language,
        voice=voice if voice is not None else (model.default_speaker if task == "CustomVoice" else None),
        instructions=req.instructions,
        ref_audio=ref_audio,
        ref_text=req.ref_text,
        x_vector_only_mode=bool(req.x_vector_only_mode) or req.speaker_embedding is not None,
        speaker_embedding=req.speaker_embedding,
        max_new_tokens=req.max_new_tokens,
        ignore_eos=req.ignore_eos,
        seed=req.seed,
        initial_codec_chunk_frames=req.initial_codec_chunk_frames,
        non_streaming_mode=req.non_streaming_mode,
        sampling=sampling,
        request_id=request_id,
    )
    return model, synthesis
