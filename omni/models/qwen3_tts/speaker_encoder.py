"""ECAPA-TDNN speaker encoder of Qwen3-TTS Base and its mel front end (tts-architectures.md §A2).

The module tree mirrors the official one, so `SpeakerEncoder(cfg).state_dict()` keys equal the checkpoint
keys under `speaker_encoder.`. The encoder runs once per reference voice and returns the x-vector
(`enc_dim` = talker hidden size) that the talker prompt places in its speaker slot.
"""

import json
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
from torch import nn

from omni.models.weights import CheckpointError, load_state_strict, read_safetensors, split_prefix

# Front-end settings the official `extract_speaker_embedding` hard-codes (modeling_qwen3_tts.py:1941-1954).
SAMPLE_RATE = 24000
N_FFT = 1024
NUM_MELS = 128
HOP_SIZE = 256
WIN_SIZE = 1024
FMIN = 0.0
FMAX = 12000.0


@dataclass
class EcapaConfig:
    """Architecture fields of `speaker_encoder_config` in config.json (defaults are the official class defaults).

    `omni.models.qwen3_tts.config.SpeakerEncoderConfig` keeps that dict as `.raw`; pass it to SpeakerEncoder.
    """

    mel_dim: int = 128
    enc_dim: int = 1024
    enc_channels: list[int] = field(default_factory=lambda: [512, 512, 512, 512, 1536])
    enc_kernel_sizes: list[int] = field(default_factory=lambda: [5, 3, 3, 3, 1])
    enc_dilations: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 1])
    enc_attention_channels: int = 128
    enc_res2net_scale: int = 8
    enc_se_channels: int = 128
    sample_rate: int = 24000

    @classmethod
    def from_dict(cls, data: dict) -> "EcapaConfig":
        """Known keys only: saved sub-configs also carry generic PretrainedConfig fields."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def __post_init__(self) -> None:
        n = len(self.enc_channels)
        if n < 3 or len(self.enc_kernel_sizes) != n or len(self.enc_dilations) != n:
            raise ValueError("enc_channels, enc_kernel_sizes and enc_dilations must have the same length (>= 3)")
        if sum(self.enc_channels[1:-1]) != self.enc_channels[-1]:
            raise ValueError(f"enc_channels[-1] must be the sum of the SE-Res2Net channels {self.enc_channels[1:-1]}")
        if any(c % self.enc_res2net_scale for c in self.enc_channels[1:-1]):
            raise ValueError(f"SE-Res2Net channels {self.enc_channels[1:-1]} must divide by {self.enc_res2net_scale}")


def _conv(in_ch: int, out_ch: int, kernel: int = 1, dilation: int = 1) -> nn.Conv1d:
    # "same" length with reflect padding, as in the official ECAPA-TDNN.
    return nn.Conv1d(in_ch, out_ch, kernel, dilation=dilation, padding="same", padding_mode="reflect")


class TimeDelayNetBlock(nn.Module):
    """Dilated 1-D conv + ReLU."""

    def __init__(self, in_ch: int, out_ch: int, kernel: int, dilation: int):
        super().__init__()
        self.conv = _conv(in_ch, out_ch, kernel, dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


class Res2NetBlock(nn.Module):
    """Splits channels into `scale` groups; group i>0 is convolved after adding group i-1's output."""

    def __init__(self, channels: int, scale: int, kernel: int, dilation: int):
        super().__init__()
        width = channels // scale
        self.scale = scale
        self.blocks = nn.ModuleList(TimeDelayNetBlock(width, width, kernel, dilation) for _ in range(scale - 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = list(torch.chunk(x, self.scale, dim=1))
        outputs = [parts[0]]
        previous = None
        for block, part in zip(self.blocks, parts[1:], strict=True):
            previous = block(part if previous is None else part + previous)
            outputs.append(previous)
        return torch.cat(outputs, dim=1)


class SqueezeExcitationBlock(nn.Module):
    """Channel gates from the time-mean of the input."""

    def __init__(self, channels: int, se_channels: int):
        super().__init__()
        self.conv1 = _conv(channels, se_channels)
        self.conv2 = _conv(se_channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(self.conv2(torch.relu(self.conv1(x.mean(dim=2, keepdim=True)))))
        return x * gate


class SqueezeExcitationRes2NetBlock(nn.Module):
    """TDNN -> Res2Net -> TDNN -> SE, with a residual connection."""

    def __init__(self, in_ch: int, out_ch: int, scale: int, se_channels: int, kernel: int, dilation: int):
        super().__init__()
        self.tdnn1 = TimeDelayNetBlock(in_ch, out_ch, 1, 1)
        self.res2net_block = Res2NetBlock(out_ch, scale, kernel, dilation)
        self.tdnn2 = TimeDelayNetBlock(out_ch, out_ch, 1, 1)
        self.se_block = SqueezeExcitationBlock(out_ch, se_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.se_block(self.tdnn2(self.res2net_block(self.tdnn1(x)))) + x


def _weighted_stats(x: torch.Tensor, weights: torch.Tensor, eps: float = 1e-12) -> tuple[torch.Tensor, torch.Tensor]:
    """Weighted mean and std over time; `weights` sum to 1 along the last axis."""
    mean = (weights * x).sum(dim=2)
    std = torch.sqrt((weights * (x - mean.unsqueeze(2)).pow(2)).sum(dim=2).clamp(eps))
    return mean, std


class AttentiveStatisticsPooling(nn.Module):
    """Attention over time (conditioned on global mean/std) -> weighted mean ‖ std per channel."""

    def __init__(self, channels: int, attention_channels: int):
        super().__init__()
        self.tdnn = TimeDelayNetBlock(channels * 3, attention_channels, 1, 1)
        self.conv = _conv(attention_channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = x.shape[2]
        uniform = torch.full((1, 1, length), 1.0 / length, dtype=x.dtype, device=x.device)
        mean, std = _weighted_stats(x, uniform)
        context = torch.cat([x, mean.unsqueeze(2).expand_as(x), std.unsqueeze(2).expand_as(x)], dim=1)
        attention = torch.softmax(self.conv(torch.tanh(self.tdnn(context))), dim=2)
        mean, std = _weighted_stats(x, attention)
        return torch.cat([mean, std], dim=1).unsqueeze(2)


class SpeakerEncoder(nn.Module):
    """ECAPA-TDNN: mel frames [B, T, mel_dim] -> x-vectors [B, enc_dim].

    `cfg` is an EcapaConfig or the raw `speaker_encoder_config` dict of config.json.
    """

    def __init__(self, cfg: EcapaConfig | dict):
        super().__init__()
        if isinstance(cfg, dict):
            cfg = EcapaConfig.from_dict(cfg)
        self.cfg = cfg
        ch, ks, dil = cfg.enc_channels, cfg.enc_kernel_sizes, cfg.enc_dilations
        self.blocks = nn.ModuleList([TimeDelayNetBlock(cfg.mel_dim, ch[0], ks[0], dil[0])])
        for i in range(1, len(ch) - 1):
            self.blocks.append(
                SqueezeExcitationRes2NetBlock(
                    ch[i - 1], ch[i], cfg.enc_res2net_scale, cfg.enc_se_channels, ks[i], dil[i]
                )
            )
        # Multi-layer feature aggregation over the concatenated SE-Res2Net outputs (sum(ch[1:-1]) == ch[-1]).
        self.mfa = TimeDelayNetBlock(ch[-1], ch[-1], ks[-1], dil[-1])
        self.asp = AttentiveStatisticsPooling(ch[-1], cfg.enc_attention_channels)
        self.fc = _conv(ch[-1] * 2, cfg.enc_dim)

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        x = mels.transpose(1, 2)
        outputs = []
        for block in self.blocks:
            x = block(x)
            outputs.append(x)
        x = self.mfa(torch.cat(outputs[1:], dim=1))
        return self.fc(self.asp(x)).squeeze(-1)

    @torch.inference_mode()
    def extract_xvector(self, wav24k: np.ndarray | torch.Tensor) -> torch.Tensor:
        return extract_xvector(self, wav24k)


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney mel scale: linear below 1 kHz, logarithmic above (librosa, htk=False)."""
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0
    mels = hz / f_sp
    log_region = hz >= min_log_hz
    mels[log_region] = min_log_mel + np.log(hz[log_region] / min_log_hz) / logstep
    return mels


def _mel_to_hz(mels: np.ndarray) -> np.ndarray:
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0
    hz = f_sp * mels
    log_region = mels >= min_log_mel
    hz[log_region] = min_log_hz * np.exp(logstep * (mels[log_region] - min_log_mel))
    return hz


def mel_filterbank(sr: int, n_fft: int, n_mels: int, fmin: float, fmax: float) -> np.ndarray:
    """Slaney-normalised triangular filters [n_mels, n_fft//2+1], the same float32 values as librosa.filters.mel."""
    fft_freqs = np.fft.rfftfreq(n=n_fft, d=1.0 / sr)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array([fmin]))[0], _hz_to_mel(np.array([fmax]))[0], n_mels + 2))
    widths = np.diff(edges)
    ramps = np.subtract.outer(edges, fft_freqs)
    weights = np.zeros((n_mels, n_fft // 2 + 1), dtype=np.float32)
    for i in range(n_mels):
        rising = -ramps[i] / widths[i]
        falling = ramps[i + 2] / widths[i + 1]
        weights[i] = np.maximum(0, np.minimum(rising, falling))
    weights *= (2.0 / (edges[2 : n_mels + 2] - edges[:n_mels]))[:, None]  # slaney: equal area per filter
    return weights


_FILTERBANK = torch.from_numpy(mel_filterbank(SAMPLE_RATE, N_FFT, NUM_MELS, FMIN, FMAX))


def mel_spectrogram(wav24k: torch.Tensor) -> torch.Tensor:
    """Log-mel of 24 kHz audio [N] or [B, N] -> [B, 128, frames], as the official speaker front end computes it."""
    if wav24k.dim() == 1:
        wav24k = wav24k.unsqueeze(0)
    if wav24k.dim() != 2 or not wav24k.is_floating_point():
        raise ValueError(f"expected float audio [N] or [B, N], got {tuple(wav24k.shape)} {wav24k.dtype}")
    pad = (N_FFT - HOP_SIZE) // 2
    if wav24k.shape[1] <= pad:
        raise ValueError(f"audio of {wav24k.shape[1]} samples is too short for the mel front end")
    padded = torch.nn.functional.pad(wav24k.unsqueeze(1), (pad, pad), mode="reflect").squeeze(1)
    window = torch.hann_window(WIN_SIZE, dtype=wav24k.dtype, device=wav24k.device)
    spec = torch.stft(padded, N_FFT, HOP_SIZE, WIN_SIZE, window, center=False, onesided=True, return_complex=True)
    magnitude = torch.sqrt(torch.view_as_real(spec).pow(2).sum(-1) + 1e-9)
    mel = torch.matmul(_FILTERBANK.to(device=wav24k.device, dtype=wav24k.dtype), magnitude)
    return torch.log(torch.clamp(mel, min=1e-5))


@torch.inference_mode()
def extract_xvector(encoder: SpeakerEncoder, wav24k: np.ndarray | torch.Tensor) -> torch.Tensor:
    """x-vector [enc_dim] of one mono 24 kHz float waveform (the official `extract_speaker_embedding`)."""
    wav = torch.as_tensor(wav24k)
    if wav.dim() != 1:
        raise ValueError(f"expected mono audio [N], got shape {tuple(wav.shape)}")
    param = next(encoder.parameters())
    mels = mel_spectrogram(wav.float()).transpose(1, 2)
    return encoder(mels.to(device=param.device, dtype=param.dtype))[0]


def load_speaker_encoder(model_dir: str | Path, dtype: torch.dtype = torch.float32) -> SpeakerEncoder:
    """The speaker encoder of a Base model directory (config.json + model.safetensors), loaded strictly."""
    model_dir = Path(model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    if config.get("tts_model_type") != "base":
        raise CheckpointError(f"{model_dir}: tts_model_type {config.get('tts_model_type')!r} has no speaker encoder")
    encoder = SpeakerEncoder(config.get("speaker_encoder_config") or {})
    state = split_prefix(read_safetensors(model_dir), "speaker_encoder.")
    load_state_strict(encoder, state, f"{model_dir} speaker_encoder", dtype=dtype)
    return encoder.to(dtype).eval()


# Batched x-vectors of different-length waveforms. Every step is the single-waveform computation with the padding
# made invisible: "same" reflect padding is gathered per item at its own end, and the time means and the attention
# softmax only see each item's valid frames. For byte-identical rows whatever the batch, the time axis is padded to
# a multiple of XVECTOR_BUCKET_FRAMES (so an item alone and in a batch runs on the same shape; the batcher groups
# requests by that padded length), convolutions run as one matmul over gathered columns (oneDNN's conv kernels
# round differently with the batch size; a matmul of the same shape per item does not).
XVECTOR_BUCKET_FRAMES = 64  # 0.68 s of audio
_MIN_COLUMNS = 8


def xvector_bucket(num_samples: int) -> int:
    """Padded mel frame count of a waveform of `num_samples` samples: its batching bucket."""
    frames = (num_samples - HOP_SIZE) // HOP_SIZE + 1
    return -(-frames // XVECTOR_BUCKET_FRAMES) * XVECTOR_BUCKET_FRAMES


def _valid_mask(lengths: torch.Tensor, total: int) -> torch.Tensor:
    """[B, 1, total] True on each item's first `lengths[b]` steps."""
    return (torch.arange(total, device=lengths.device)[None, :] < lengths[:, None]).unsqueeze(1)


def _reflect_pad(x: torch.Tensor, lengths: torch.Tensor, left: int, total: int) -> torch.Tensor:
    """[B, C, T] -> [B, C, total]: each item reflect-padded by `left` at its start and at its own valid end
    (what F.pad reflect does to it alone), then whatever fills the rest."""
    steps = torch.arange(-left, total - left, device=x.device)[None, :]
    last = (lengths - 1)[:, None]
    index = steps.abs()
    index = torch.where(index > last, 2 * last - index, index).clamp(0, x.shape[2] - 1)
    return torch.gather(x, 2, index.unsqueeze(1).expand(-1, x.shape[1], -1))


def _conv_masked(conv: nn.Conv1d, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The "same" reflect conv of each item, as a matmul over gathered columns [B, C_in * kernel, T]."""
    kernel, dilation, steps = conv.kernel_size[0], conv.dilation[0], x.shape[2]
    span = dilation * (kernel - 1)
    x = _reflect_pad(x, lengths, span // 2, steps + span) if span else x  # torch's "same" split
    columns = torch.stack([x[:, :, k * dilation : k * dilation + steps] for k in range(kernel)], dim=2)
    # bmm: one product of the same shape per item (a 2-D @ 3-D matmul folds the batch into one GEMM whose
    # kernel, and so its rounding, depends on the batch size).
    # Fewer than 8 columns (the pooled vector) would take a matrix-vector kernel that rounds differently with the
    # batch size, so those are padded with zero columns.
    columns = columns.reshape(x.shape[0], -1, steps)
    if steps < _MIN_COLUMNS:
        columns = nn.functional.pad(columns, (0, _MIN_COLUMNS - steps))
    weight = conv.weight.reshape(1, conv.out_channels, -1).expand(x.shape[0], -1, -1)
    return torch.bmm(weight, columns)[:, :, :steps] + conv.bias[:, None]


def _tdnn_masked(block: TimeDelayNetBlock, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    return torch.relu(_conv_masked(block.conv, x, lengths))


def _se_res2net_masked(block: SqueezeExcitationRes2NetBlock, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    residual = x
    x = _tdnn_masked(block.tdnn1, x, lengths)
    parts = list(torch.chunk(x, block.res2net_block.scale, dim=1))
    outputs, previous = [parts[0]], None
    for tdnn, part in zip(block.res2net_block.blocks, parts[1:], strict=True):
        previous = _tdnn_masked(tdnn, part if previous is None else part + previous, lengths)
        outputs.append(previous)
    x = _tdnn_masked(block.tdnn2, torch.cat(outputs, dim=1), lengths)
    mask = _valid_mask(lengths, x.shape[2])
    mean = (x * mask).sum(dim=2, keepdim=True) / lengths[:, None, None].to(x.dtype)
    se = block.se_block
    gate = torch.sigmoid(_conv_masked(se.conv2, torch.relu(_conv_masked(se.conv1, mean, lengths)), lengths))
    return x * gate + residual


def _pool_masked(asp: AttentiveStatisticsPooling, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    mask = _valid_mask(lengths, x.shape[2])
    x = x * mask  # padded frames hold finite leftovers; zero them so that weight 0 means contribution 0
    mean, std = _weighted_stats(x, mask / lengths[:, None, None].to(x.dtype))
    context = torch.cat([x, mean.unsqueeze(2).expand_as(x), std.unsqueeze(2).expand_as(x)], dim=1)
    logits = _conv_masked(asp.conv, torch.tanh(_tdnn_masked(asp.tdnn, context, lengths)), lengths)
    attention = torch.softmax(logits.masked_fill(~mask, float("-inf")), dim=2)
    mean, std = _weighted_stats(x, attention)
    return torch.cat([mean, std], dim=1).unsqueeze(2)


def mel_spectrogram_batch(wavs: list[torch.Tensor], frames: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-mels of several 24 kHz waveforms, right-padded to `frames`: ([B, 128, frames], frame counts [B])."""
    lengths = torch.tensor([len(w) for w in wavs])
    pad = (N_FFT - HOP_SIZE) // 2
    if int(lengths.min()) <= pad:
        raise ValueError(f"audio of {int(lengths.min())} samples is too short for the mel front end")
    counts = (lengths - HOP_SIZE) // HOP_SIZE + 1
    if int(counts.max()) > frames:
        raise ValueError(f"audio of {int(lengths.max())} samples has more than {frames} mel frames")
    audio = torch.nn.utils.rnn.pad_sequence(list(wavs), batch_first=True)
    padded = _reflect_pad(audio.unsqueeze(1), lengths, pad, (frames - 1) * HOP_SIZE + N_FFT).squeeze(1)
    window = torch.hann_window(WIN_SIZE, dtype=audio.dtype, device=audio.device)
    spec = torch.stft(padded, N_FFT, HOP_SIZE, WIN_SIZE, window, center=False, onesided=True, return_complex=True)
    magnitude = torch.sqrt(torch.view_as_real(spec).pow(2).sum(-1) + 1e-9)
    mel = torch.matmul(_FILTERBANK.to(device=audio.device, dtype=audio.dtype), magnitude)
    return torch.log(torch.clamp(mel, min=1e-5)), counts


@torch.inference_mode()
def extract_xvectors(encoder: SpeakerEncoder, wavs: list[np.ndarray | torch.Tensor]) -> torch.Tensor:
    """x-vectors [B, enc_dim] of several mono 24 kHz waveforms of any lengths, in one batched pass.

    Each row equals `extract_xvector` of that waveform alone up to float rounding, and is byte-identical to this
    function's row for the waveform alone whenever the waveform's `xvector_bucket` is the batch's largest.
    """
    wavs = [torch.as_tensor(w).float() for w in wavs]
    if not wavs or any(w.dim() != 1 for w in wavs):
        raise ValueError(f"expected a non-empty list of mono audio [N], got {[tuple(w.shape) for w in wavs]}")
    param = next(encoder.parameters())
    mels, lengths = mel_spectrogram_batch(wavs, max(xvector_bucket(len(w)) for w in wavs))
    lengths = lengths.to(param.device)
    x = mels.to(device=param.device, dtype=param.dtype)
    outputs = []
    for i, block in enumerate(encoder.blocks):
        x = _tdnn_masked(block, x, lengths) if i == 0 else _se_res2net_masked(block, x, lengths)
        outputs.append(x)
    x = _tdnn_masked(encoder.mfa, torch.cat(outputs[1:], dim=1), lengths)
    return _conv_masked(encoder.fc, _pool_masked(encoder.asp, x, lengths), lengths).squeeze(-1)
