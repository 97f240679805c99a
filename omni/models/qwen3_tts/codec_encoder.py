"""Qwen3-TTS 12 Hz codec encoder: 24 kHz reference audio -> codes [T, 16] for voice cloning.

The official encoder is a transformers `MimiModel` with its decoder half removed; we use transformers' own Mimi
(encoder half only) and load the `encoder.*` tensors of `speech_tokenizer/model.safetensors` into it. The official
file names them as transformers 4 did (`encoder.layers.*`, `encoder_transformer.*`, `downsample.*`, `quantizer.*`);
transformers 5 nests the first three under the encoder half, so the names are mapped on load. Of the split RVQ's
codebooks only the first `encoder_valid_num_quantizers` (16) are kept, and the frames are trimmed to
ceil(samples / 1920), as the official `encode` does.

`encode_batch` runs several clips of different lengths in one call. Mimi's encoder is causal (causal convolutions,
causal attention), so right padding never reaches a clip's valid steps except through the strided convolutions:
alone, a clip's strided conv pads its input's end (zeros, or the last value for the replicate-padded downsample);
in a batch it would read the batch's padding instead. So before each strided conv every clip's steps past its own
length are rewritten to what it would have been padded with alone.
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
        wav = _checked_audio(wav)
        p = next(self.mimi.parameters())
        x = wav.to(device=p.device, dtype=p.dtype)[None, None, :]
        codes = self.mimi.encode(x, num_quantizers=self.valid_quantizers).audio_codes  # [1, 16, frames]
        frames = -(-wav.numel() // self.samples_per_frame)
        return codes[0, : self.valid_quantizers, :frames].transpose(0, 1).long().contiguous()

    @torch.no_grad()
    def encode_batch(self, wavs: list[np.ndarray | torch.Tensor]) -> list[torch.Tensor]:
        """Several mono 24 kHz clips of any lengths, in one batched pass -> codes int64 [ceil(N_i/1920), 16] each,
        the same as `encode` of each clip alone."""
        from transformers.models.mimi.modeling_mimi import MimiConv1d

        wavs = [_checked_audio(w) for w in wavs]
        if not wavs:
            raise ValueError("encode_batch expects at least one clip")
        p = next(self.mimi.parameters())
        x = torch.nn.utils.rnn.pad_sequence([w.to(device=p.device, dtype=p.dtype) for w in wavs], batch_first=True)
        x = x[:, None, :]
        lengths = torch.tensor([w.numel() for w in wavs], device=p.device)
        encoder = self.mimi.encoder
        for layer in encoder.encoder_seanet.layers:
            if isinstance(layer, MimiConv1d):
                if layer.conv.stride[0] > 1:
                    x = _pad_past_lengths(x, lengths, layer.pad_mode)
                lengths = layer._get_output_length(lengths)
            x = layer(x)
        x = encoder.encoder_transformer(x.transpose(1, 2)).last_hidden_state.transpose(1, 2)
        x = encoder.downsample(_pad_past_lengths(x, lengths, encoder.downsample.pad_mode))
        codes = self.mimi.quantizer.encode(x, self.valid_quantizers)  # [16, B, frames]
        return [
            codes[: self.valid_quantizers, i, : -(-w.numel() // self.samples_per_frame)].transpose(0, 1).long()
            for i, w in enumerate(wavs)
        ]


def _checked_audio(wav: np.ndarray | torch.Tensor) -> torch.Tensor:
    wav = torch.as_tensor(wav)
    if wav.dim() != 1 or wav.numel() == 0 or not wav.is_floating_point():
        raise ValueError(f"encode expects non-empty mono float audio [N], got {wav.dtype} {list(wav.shape)}")
    if not torch.isfinite(wav).all():
        raise ValueError("encode: audio contains NaN or infinite samples")
    return wav


def _pad_past_lengths(x: torch.Tensor, lengths: torch.Tensor, mode: str) -> torch.Tensor:
    """[B, C, T]: each item's steps from its length on become its own end padding (zeros, or its last step)."""
    steps = torch.arange(x.shape[2], device=x.device)[None, None, :]
    valid = steps < lengths[:, None, None]
    if mode == "replicate":
        last = torch.gather(x, 2, (lengths - 1)[:, None, None].expand(-1, x.shape[1], 1))
        return torch.where(valid, x, last)
    if mode == "constant":
        return x * valid
    raise ValueError(f"unsupported Mimi pad mode {mode!r}")
