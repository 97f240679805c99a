"""Qwen3-TTS 12 Hz codec encoder: 24 kHz reference audio -> codes [T, 16] for voice cloning.

The official encoder is a transformers `MimiModel` with its decoder half removed; we use transformers' own Mimi
(encoder half only) and load the `encoder.*` tensors of `speech_tokenizer/model.safetensors` into it. The official
file names them as transformers 4 did (`encoder.layers.*`, `encoder_transformer.*`, `downsample.*`, `quantizer.*`);
transformers 5 nests the first three under the encoder half, so the names are mapped on load. Of the split RVQ's
codebooks only the first `encoder_valid_num_quantizers` (16) are kept, and the frames are trimmed to
ceil(samples / 1920), as the official `encode` does.
"""

import json
from pathlib import Path

import numpy as np
import torch

from omni.models.qwen3_tts.codec import speech_tokenizer_dir
from omni.models.weights import load_state_strict, read_safetensors, split_prefix

# transformers 4 MimiModel names (the official file) -> transformers 5 MimiModel names.
_RENAMES = (
    ("encoder.", "encoder.encoder_seanet."),
    ("encoder_transformer.", "encoder.encoder_transformer."),
    ("downsample.", "encoder.downsample."),
    ("quantizer.", "quantizer."),
)


def official_to_mimi_names(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = {}
    for key, value in tensors.items():
        for old, new in _RENAMES:
            if key.startswith(old):
                out[new + key[len(old) :]] = value
                break
        else:
            out[key] = value  # left for load_state_strict to report as unknown
    return out


class CodecEncoder:
    """Mimi encoder + split RVQ with the official speech tokenizer weights."""

    def __init__(self, mimi, valid_quantizers: int, samples_per_frame: int, sample_rate: int):
        self.mimi = mimi
        self.valid_quantizers = valid_quantizers
        self.samples_per_frame = samples_per_frame
        self.sample_rate = sample_rate

    @classmethod
    def from_pretrained(
        cls, path: str | Path, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
    ) -> "CodecEncoder":
        """Load from a model folder or its `speech_tokenizer/` folder."""
        from transformers import MimiConfig, MimiModel

        directory = speech_tokenizer_dir(path)
        raw = json.loads((directory / "config.json").read_text())
        config = MimiConfig(**raw["encoder_config"])
        config.decoder_config = None
        config._attn_implementation = "eager"
        mimi = MimiModel(config)
        state = official_to_mimi_names(split_prefix(read_safetensors(directory), "encoder."))
        load_state_strict(mimi, state, f"{directory} encoder")
        mimi = mimi.to(device=device, dtype=dtype).eval()
        valid = int(raw.get("encoder_valid_num_quantizers", 16))
        if valid > config.num_quantizers:
            raise ValueError(f"{directory}: encoder_valid_num_quantizers {valid} > num_quantizers")
        return cls(mimi, valid, int(raw.get("encode_downsample_rate", 1920)), int(raw.get("input_sample_rate", 24000)))

    @torch.no_grad()
    def encode(self, wav: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Mono float audio at 24 kHz [N] -> codes int64 [ceil(N/1920), 16]."""
        wav = torch.as_tensor(wav)
        if wav.dim() != 1 or wav.numel() == 0 or not wav.is_floating_point():
            raise ValueError(f"encode expects non-empty mono float audio [N], got {wav.dtype} {list(wav.shape)}")
        if not torch.isfinite(wav).all():
            raise ValueError("encode: audio contains NaN or infinite samples")
        p = next(self.mimi.parameters())
        x = wav.to(device=p.device, dtype=p.dtype)[None, None, :]
        codes = self.mimi.encode(x, num_quantizers=self.valid_quantizers).audio_codes  # [1, 16, frames]
        frames = -(-wav.numel() // self.samples_per_frame)
        return codes[0, : self.valid_quantizers, :frames].transpose(0, 1).long().contiguous()
