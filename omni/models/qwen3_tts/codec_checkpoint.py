"""A tiny random-weight `speech_tokenizer/` folder in the official layout, for tests and demos.

It holds what the released folder holds: config.json (model_type "qwen3_tts_tokenizer_12hz", a Mimi
`encoder_config`, a `decoder_config`, the rates, `encoder_valid_num_quantizers` 16), preprocessor_config.json for
transformers' EncodecFeatureExtractor, and model.safetensors with `encoder.*` keys named as the official file names
them (transformers 4.x MimiModel names, decoder half removed, VQ state as buffers) and `decoder.*` keys.
Only the widths shrink (tts-architectures.md §A6); rates, codebook sizes and the 16 codebooks are real, so codes
and sample counts are those of the released model.

Weights are drawn so that every part matters: layer scales, ConvNeXt gammas and SnakeBeta parameters are far from
their near-identity initial values, and the output stays mostly inside the final clamp to [-1, 1].
"""

import json
import math
from pathlib import Path

import torch

from omni.models.qwen3_tts.codec import CodecDecoder, CodecDecoderConfig
from omni.models.weights import save_safetensors

TINY_ENCODER = dict(
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=16,
    intermediate_size=64,
    num_filters=4,
    codebook_size=2048,
    codebook_dim=8,
    vector_quantization_hidden_dimension=8,
    num_quantizers=32,
    upsample_groups=32,
)
TINY_DECODER = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=16,
    intermediate_size=64,
    latent_dim=64,
    codebook_dim=32,
    codebook_size=2048,
    decoder_dim=64,
    sliding_window=72,
    num_quantizers=16,
)

# Mimi fields written into encoder_config (the released file spells out the full Mimi config).
_MIMI_DEFAULTS = dict(
    audio_channels=1,
    sampling_rate=24000,
    num_filters=64,
    num_residual_layers=1,
    upsampling_ratios=[8, 6, 5, 4],
    kernel_size=7,
    last_kernel_size=3,
    residual_kernel_size=3,
    dilation_growth_rate=2,
    use_causal_conv=True,
    pad_mode="constant",
    compress=2,
    trim_right_ratio=1.0,
    codebook_size=2048,
    codebook_dim=256,
    num_quantizers=32,
    num_semantic_quantizers=1,
    use_conv_shortcut=False,
    vector_quantization_hidden_dimension=256,
    upsample_groups=512,
    hidden_size=512,
    num_hidden_layers=8,
    intermediate_size=2048,
    num_attention_heads=8,
    num_key_value_heads=8,
    head_dim=64,
    hidden_act="gelu",
    max_position_embeddings=8000,
    initializer_range=0.02,
    norm_eps=1e-5,
    use_cache=False,
    rope_theta=10000.0,
    sliding_window=250,
    attention_dropout=0.0,
    layer_scale_initial_scale=0.01,
    attention_bias=False,
    _frame_rate=12.5,
    model_type="mimi",
)

PREPROCESSOR_CONFIG = {
    "chunk_length_s": None,
    "feature_extractor_type": "EncodecFeatureExtractor",
    "feature_size": 1,
    "overlap": None,
    "padding_side": "right",
    "padding_value": 0.0,
    "return_attention_mask": True,
    "sampling_rate": 24000,
}


def _mimi_encoder_names(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """transformers 5 MimiModel (encoder half) names -> the official file's `encoder.` names (transformers 4)."""
    out = {}
    for key, value in tensors.items():
        if key.startswith("encoder.encoder_seanet."):
            name = "encoder." + key[len("encoder.encoder_seanet.") :]
        elif key.startswith("encoder."):
            name = key[len("encoder.") :]
        elif key.startswith("quantizer."):
            name = key
        else:
            raise AssertionError(f"unexpected Mimi key {key}")
        out["encoder." + name] = value
    return out


def _random_tensor(name: str, shape: torch.Size, gen: torch.Generator) -> torch.Tensor:
    """A random value for parameter `name` whose scale keeps activations O(1) through the whole stack."""
    leaf = name.rsplit(".", 1)[-1]

    def normal(std: float, mean: float = 0.0) -> torch.Tensor:
        return torch.randn(shape, generator=gen) * std + mean

    def uniform(lo: float, hi: float) -> torch.Tensor:
        return torch.rand(shape, generator=gen) * (hi - lo) + lo

    if leaf == "initialized":
        return torch.ones(shape)
    if leaf == "cluster_usage":
        return uniform(0.5, 2.0)
    if leaf in ("embedding_sum", "embed_sum"):
        return normal(0.5)
    if leaf in ("alpha", "beta"):  # SnakeBeta log-parameters
        return normal(0.3)
    if leaf == "scale":  # LayerScale
        return uniform(0.2, 0.6)
    if leaf == "gamma":  # ConvNeXt
        return uniform(0.1, 0.4)
    if "norm" in name and leaf == "weight":
        return normal(0.1, 1.0)
    if leaf == "bias":
        return normal(0.02)
    if len(shape) >= 2:
        fan_in = math.prod(shape[1:])
        if name.startswith("upsample.") and ".0.conv." in name:
            fan_in = shape[0]  # transposed conv [in, out, k] with k = stride: one tap per output
        elif ".block.1.conv." in name:
            fan_in = 2 * shape[0]  # transposed conv with k = 2*stride: two taps per output
        gain = 1.0
        if name.endswith(".conv2.conv.weight"):
            gain = 0.15  # residual units: keep the vocoder from growing block after block
        elif name.endswith("decoder.6.conv.weight"):
            gain = 0.1  # final conv: audio mostly inside the clamp, at speech-like level
        return normal(gain / math.sqrt(fan_in))
    return normal(0.1, 1.0)


def tiny_decoder_state(cfg: CodecDecoderConfig, gen: torch.Generator) -> dict[str, torch.Tensor]:
    shapes = {k: v.shape for k, v in CodecDecoder(cfg).state_dict().items()}
    return {f"decoder.{k}": _random_tensor(k, s, gen) for k, s in shapes.items()}


def tiny_encoder_state(encoder_config: dict, gen: torch.Generator) -> dict[str, torch.Tensor]:
    from transformers import MimiConfig, MimiModel

    config = MimiConfig(**{k: v for k, v in encoder_config.items() if k not in ("_frame_rate", "model_type")})
    config.decoder_config = None
    with torch.device("meta"):
        shapes = {k: v.shape for k, v in MimiModel(config).state_dict().items()}
    return {
        k: _random_tensor(k, v.shape, gen)
        for k, v in _mimi_encoder_names({k: torch.empty(s) for k, s in shapes.items()}).items()
    }


def write_tiny_speech_tokenizer(out_dir: str | Path, seed: int = 0, **sizes) -> Path:
    """Write a tiny `speech_tokenizer/` folder at `out_dir`; returns its path.

    `sizes` override the tiny widths, prefixed by the half they belong to, e.g. `decoder_sliding_window=8`,
    `encoder_num_quantizers=16`.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    encoder = dict(TINY_ENCODER)
    decoder = dict(TINY_DECODER)
    for key, value in sizes.items():
        half, _, name = key.partition("_")
        if half == "encoder" and name in _MIMI_DEFAULTS:
            encoder[name] = value
        elif half == "decoder" and name in CodecDecoderConfig.__dataclass_fields__:
            decoder[name] = value
        else:
            raise ValueError(
                f"write_tiny_speech_tokenizer: unknown size {key!r} (use encoder_<mimi field> or decoder_<field>)"
            )
    encoder_config = {**_MIMI_DEFAULTS, **encoder}
    decoder_config = {
        **{k: v for k, v in CodecDecoderConfig().__dict__.items()},
        **decoder,
        "layer_scale_initial_scale": 0.01,
        "max_position_embeddings": 8000,
        "attention_dropout": 0.0,
        "semantic_codebook_size": 4096,
        "vector_quantization_hidden_dimension": decoder["codebook_dim"],
    }
    config = {
        "architectures": ["Qwen3TTSTokenizerV2Model"],
        "model_type": "qwen3_tts_tokenizer_12hz",
        "encoder_valid_num_quantizers": 16,
        "input_sample_rate": 24000,
        "output_sample_rate": 24000,
        "encode_downsample_rate": 1920,
        "decode_upsample_rate": 1920,
        "encoder_config": encoder_config,
        "decoder_config": decoder_config,
        "dtype": "float32",
        "transformers_version": "4.57.3",
    }
    gen = torch.Generator().manual_seed(seed)
    tensors = tiny_encoder_state(encoder_config, gen)
    tensors.update(tiny_decoder_state(CodecDecoderConfig.from_dict(decoder_config), gen))
    (out_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (out_dir / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR_CONFIG, indent=2) + "\n")
    save_safetensors(tensors, out_dir / "model.safetensors")
    return out_dir
