"""Qwen3-TTS configuration, parsed from the official `config.json` and `generation_config.json`.

Token ids, speakers and languages always come from the checkpoint: the reference config class has
defaults for the codec ids (4196..4205) that are wrong for the released models, so we have none.
Architecture fields that the reference config class defaults (and that `save_pretrained` therefore
may omit) default to the same values here.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omni.models.weights import CheckpointError

VARIANTS = ("base", "custom_voice", "voice_design")


class ConfigError(CheckpointError):
    """A config file is missing, or a field in it is missing or invalid."""


_MISSING = object()


def _get(d: dict, key: str, where: str, kind: type | tuple[type, ...], default: Any = _MISSING) -> Any:
    """d[key] checked against `kind`; a missing key without a default or a wrong type names the field."""
    if key not in d or d[key] is None:
        if default is _MISSING:
            raise ConfigError(f"{where}: missing field {key!r}")
        return default
    value = d[key]
    ok = isinstance(value, kind) and not (isinstance(value, bool) and bool not in _as_tuple(kind))
    if not ok:
        raise ConfigError(f"{where}: field {key!r} has invalid value {value!r} (expected {kind})")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _positive(value: int, key: str, where: str) -> int:
    if value <= 0:
        raise ConfigError(f"{where}: field {key!r} must be positive, got {value}")
    return value


@dataclass(frozen=True)
class TransformerConfig:
    """The Qwen3 decoder stack shared by the talker and the code predictor."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    rope_theta: float
    rms_norm_eps: float
    max_position_embeddings: int

    @classmethod
    def parse(cls, d: dict, where: str, defaults: dict[str, Any]) -> "TransformerConfig":
        def get(key: str, kind: type | tuple[type, ...]) -> Any:
            return _get(d, key, where, kind, defaults.get(key, _MISSING))

        hidden = _positive(get("hidden_size", int), "hidden_size", where)
        heads = _positive(get("num_attention_heads", int), "num_attention_heads", where)
        kv_heads = _positive(get("num_key_value_heads", int), "num_key_value_heads", where)
        if heads % kv_heads:
            raise ConfigError(
                f"{where}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"
            )
        # As in the reference: head_dim falls back to hidden_size // num_attention_heads.
        head_dim = _positive(_get(d, "head_dim", where, int, hidden // heads), "head_dim", where)
        if head_dim % 2:
            raise ConfigError(f"{where}: field 'head_dim' must be even for RoPE, got {head_dim}")
        act = _get(d, "hidden_act", where, str, "silu")
        if act != "silu":
            raise ConfigError(f"{where}: field 'hidden_act' must be 'silu', got {act!r}")
        if _get(d, "attention_bias", where, bool, False):
            raise ConfigError(f"{where}: field 'attention_bias' must be false (Qwen3 attention has no bias)")
        if _get(d, "use_sliding_window", where, bool, False):
            raise ConfigError(f"{where}: field 'use_sliding_window' must be false")
        return cls(
            hidden_size=hidden,
            intermediate_size=_positive(get("intermediate_size", int), "intermediate_size", where),
            num_hidden_layers=_positive(get("num_hidden_layers", int), "num_hidden_layers", where),
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            head_dim=head_dim,
            vocab_size=_positive(get("vocab_size", int), "vocab_size", where),
            rope_theta=float(get("rope_theta", (int, float))),
            rms_norm_eps=float(get("rms_norm_eps", (int, float))),
            max_position_embeddings=_positive(get("max_position_embeddings", int), "max_position_embeddings", where),
        )


# Defaults of the reference config classes for fields `save_pretrained` may leave out.
_TALKER_DEFAULTS = dict(
    vocab_size=3072, hidden_size=1024, intermediate_size=2048, num_hidden_layers=20, num_attention_heads=16,
    num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=10000, max_position_embeddings=32768,
)  # fmt: skip
_PREDICTOR_DEFAULTS = dict(
    vocab_size=2048, hidden_size=1024, intermediate_size=3072, num_hidden_layers=5, num_attention_heads=16,
    num_key_value_heads=8, rms_norm_eps=1e-6, rope_theta=10000, max_position_embeddings=32768,
)  # fmt: skip


@dataclass(frozen=True)
class CodePredictorConfig(TransformerConfig):
    num_code_groups: int = 16


@dataclass(frozen=True)
class TalkerConfig(TransformerConfig):
    text_vocab_size: int = 0
    text_hidden_size: int = 0
    num_code_groups: int = 16
    mrope_section: tuple[int, ...] | None = None
    # Codec-track control ids (rows of the talker's codec_embedding).
    codec_pad_id: int = 0
    codec_bos_id: int = 0
    codec_eos_token_id: int = 0
    codec_think_id: int = 0
    codec_nothink_id: int = 0
    codec_think_bos_id: int = 0
    codec_think_eos_id: int = 0
    spk_id: dict[str, int] = field(default_factory=dict)
    spk_is_dialect: dict[str, str | bool] = field(default_factory=dict)
    codec_language_id: dict[str, int] = field(default_factory=dict)
    code_predictor: CodePredictorConfig | None = None


@dataclass(frozen=True)
class SpeakerEncoderConfig:
    """Kept as the raw dict plus the two fields every user needs; SpeakerEncoder reads the rest."""

    enc_dim: int
    sample_rate: int
    raw: dict[str, Any]


@dataclass(frozen=True)
class GenerationConfig:
    """generation_config.json: the released sampling defaults."""

    do_sample: bool
    temperature: float
    top_k: int
    top_p: float
    repetition_penalty: float
    subtalker_dosample: bool
    subtalker_temperature: float
    subtalker_top_k: int
    subtalker_top_p: float
    max_new_tokens: int

    @classmethod
    def parse(cls, d: dict, where: str) -> "GenerationConfig":
        num = (int, float)
        return cls(
            do_sample=_get(d, "do_sample", where, bool),
            temperature=float(_get(d, "temperature", where, num)),
            top_k=_get(d, "top_k", where, int),
            top_p=float(_get(d, "top_p", where, num)),
            repetition_penalty=float(_get(d, "repetition_penalty", where, num)),
            subtalker_dosample=_get(d, "subtalker_dosample", where, bool),
            subtalker_temperature=float(_get(d, "subtalker_temperature", where, num)),
            subtalker_top_k=_get(d, "subtalker_top_k", where, int),
            subtalker_top_p=float(_get(d, "subtalker_top_p", where, num)),
            max_new_tokens=_positive(_get(d, "max_new_tokens", where, int), "max_new_tokens", where),
        )


@dataclass(frozen=True)
class Qwen3TTSConfig:
    tts_model_type: str
    tts_model_size: str
    tokenizer_type: str
    talker: TalkerConfig
    code_predictor: CodePredictorConfig
    speaker_encoder: SpeakerEncoderConfig | None
    # Text-track ids (rows of the talker's text_embedding).
    im_start_token_id: int
    im_end_token_id: int
    tts_pad_token_id: int
    tts_bos_token_id: int
    tts_eos_token_id: int
    assistant_token_id: int | None  # optional in config.json; the tokenizer also yields it
    raw: dict[str, Any]

    @classmethod
    def parse(cls, d: dict, where: str = "config.json") -> "Qwen3TTSConfig":
        model_type = _get(d, "model_type", where, str)
        if model_type != "qwen3_tts":
            raise ConfigError(f"{where}: field 'model_type' must be 'qwen3_tts', got {model_type!r}")
        variant = _get(d, "tts_model_type", where, str)
        if variant not in VARIANTS:
            raise ConfigError(f"{where}: field 'tts_model_type' must be one of {VARIANTS}, got {variant!r}")
        talker = _parse_talker(_get(d, "talker_config", where, dict), f"{where}: talker_config")
        speaker = None
        if variant == "base":
            sd = _get(d, "speaker_encoder_config", where, dict)
            sw = f"{where}: speaker_encoder_config"
            speaker = SpeakerEncoderConfig(
                enc_dim=_positive(_get(sd, "enc_dim", sw, int, 1024), "enc_dim", sw),
                sample_rate=_positive(_get(sd, "sample_rate", sw, int, 24000), "sample_rate", sw),
                raw=sd,
            )
            if speaker.enc_dim != talker.hidden_size:
                raise ConfigError(f"{sw}: enc_dim {speaker.enc_dim} != talker hidden_size {talker.hidden_size}")
        return cls(
            tts_model_type=variant,
            tts_model_size=_get(d, "tts_model_size", where, str),
            tokenizer_type=_get(d, "tokenizer_type", where, str),
            talker=talker,
            code_predictor=talker.code_predictor,
            speaker_encoder=speaker,
            im_start_token_id=_get(d, "im_start_token_id", where, int),
            im_end_token_id=_get(d, "im_end_token_id", where, int),
            tts_pad_token_id=_get(d, "tts_pad_token_id", where, int),
            tts_bos_token_id=_get(d, "tts_bos_token_id", where, int),
            tts_eos_token_id=_get(d, "tts_eos_token_id", where, int),
            assistant_token_id=_get(d, "assistant_token_id", where, int, None),
            raw=d,
        )


def _parse_talker(d: dict, where: str) -> TalkerConfig:
    base = TransformerConfig.parse(d, where, _TALKER_DEFAULTS)
    rope_scaling = _get(d, "rope_scaling", where, dict, None)
    mrope_section = None
    if rope_scaling is not None:
        # Only the interleaved M-RoPE with identical position rows is used by TTS: it equals plain NeoX RoPE.
        rope_type = rope_scaling.get("rope_type", rope_scaling.get("type", "default"))
        if rope_type != "default":
            raise ConfigError(f"{where}: rope_scaling.rope_type must be 'default', got {rope_type!r}")
        section = rope_scaling.get("mrope_section")
        if not isinstance(section, list) or sum(section) != base.head_dim // 2:
            raise ConfigError(f"{where}: rope_scaling.mrope_section {section!r} must sum to head_dim/2")
        mrope_section = tuple(section)
    ids = {}
    for key in (
        "codec_pad_id",
        "codec_bos_id",
        "codec_eos_token_id",
        "codec_think_id",
        "codec_nothink_id",
        "codec_think_bos_id",
        "codec_think_eos_id",
    ):
        ids[key] = _get(d, key, where, int)
        if not 0 <= ids[key] < base.vocab_size:
            raise ConfigError(f"{where}: field {key!r} = {ids[key]} is outside the codec vocabulary {base.vocab_size}")
    spk_id = _id_map(_get(d, "spk_id", where, dict), "spk_id", where, base.vocab_size)
    languages = _id_map(_get(d, "codec_language_id", where, dict), "codec_language_id", where, base.vocab_size)
    dialect = _get(d, "spk_is_dialect", where, dict, {})
    for name, value in dialect.items():
        if value is not False and value not in languages:
            raise ConfigError(f"{where}: spk_is_dialect[{name!r}] = {value!r} is neither false nor a known language")
    pw = f"{where}: code_predictor_config"
    predictor = _parse_predictor(_get(d, "code_predictor_config", where, dict), pw)
    groups = _positive(_get(d, "num_code_groups", where, int, 32), "num_code_groups", where)
    if predictor.num_code_groups != groups:
        raise ConfigError(f"{pw}: num_code_groups {predictor.num_code_groups} != the talker's {groups}")
    return TalkerConfig(
        **vars(base),
        text_vocab_size=_positive(_get(d, "text_vocab_size", where, int), "text_vocab_size", where),
        text_hidden_size=_positive(_get(d, "text_hidden_size", where, int, 2048), "text_hidden_size", where),
        num_code_groups=groups,
        mrope_section=mrope_section,
        spk_id=spk_id,
        spk_is_dialect=dict(dialect),
        codec_language_id=languages,
        code_predictor=predictor,
        **ids,
    )


def _parse_predictor(d: dict, where: str) -> CodePredictorConfig:
    base = TransformerConfig.parse(d, where, _PREDICTOR_DEFAULTS)
    if d.get("rope_scaling") is not None:
        raise ConfigError(f"{where}: field 'rope_scaling' must be null for the code predictor")
    groups = _positive(_get(d, "num_code_groups", where, int, 32), "num_code_groups", where)
    return CodePredictorConfig(**vars(base), num_code_groups=groups)


def _id_map(d: dict, key: str, where: str, vocab: int) -> dict[str, int]:
    for name, value in d.items():
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < vocab:
            raise ConfigError(f"{where}: {key}[{name!r}] = {value!r} is not a codec id below {vocab}")
    return dict(d)


def _read_json(path: Path) -> dict:
    if not path.exists():
        raise ConfigError(f"{path.parent}: {path.name} is missing")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: invalid JSON ({e})") from e
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return data


def load_config(model_dir: str | Path) -> Qwen3TTSConfig:
    path = Path(model_dir) / "config.json"
    return Qwen3TTSConfig.parse(_read_json(path), str(path))


def load_generation_config(model_dir: str | Path) -> GenerationConfig:
    path = Path(model_dir) / "generation_config.json"
    return GenerationConfig.parse(_read_json(path), str(path))
