"""Qwen3-TTS 12 Hz codec decoder (codes -> 24 kHz waveform), whole-utterance and exact streaming over slots.

The decoder is strictly causal, so a stream can be decoded chunk by chunk with a small carried state and give the
same samples as a whole-utterance decode. Per stream the state is: for each transformer layer the last
`sliding_window - 1` post-RoPE keys and values (the attention window, current token excluded) with their absolute
positions, each causal conv's last `(k-1)*dilation` input samples, and each `k=2s` transposed conv's last input
sample. All of it lives in preallocated per-slot tensors (`CodecState`); `decode_streams` gathers the rows of a
batch of slots, runs one batched forward with chunks right-padded to the longest, and writes the new state back.

Right padding is safe without masking: every layer is causal, so valid outputs never see padded inputs; the
padded tail is only kept out of the state, by taking each row's new history just behind its own valid end.

Module tree = the `decoder.` keys of the official `speech_tokenizer/model.safetensors`.
"""

import functools
import json
import math
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence

from omni.device import to_device
from omni.models.weights import CheckpointError, load_state_strict, read_safetensors, split_prefix

SAMPLE_RATE = 24000
NUM_CODEBOOKS = 16


@dataclass
class CodecDecoderConfig:
    """`decoder_config` of `speech_tokenizer/config.json` (defaults = the released model)."""

    codebook_size: int = 2048
    codebook_dim: int = 512
    latent_dim: int = 1024
    hidden_size: int = 512
    intermediate_size: int = 1024
    num_hidden_layers: int = 8
    num_attention_heads: int = 16
    num_key_value_heads: int = 16
    head_dim: int = 64
    attention_bias: bool = False
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    sliding_window: int = 72
    num_quantizers: int = 16
    upsample_rates: list[int] = field(default_factory=lambda: [8, 5, 4, 3])
    upsampling_ratios: list[int] = field(default_factory=lambda: [2, 2])
    decoder_dim: int = 1536
    hidden_act: str = "silu"

    @classmethod
    def from_dict(cls, raw: dict) -> "CodecDecoderConfig":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in raw.items() if k in known}
        if "head_dim" not in raw:
            values["head_dim"] = raw.get("hidden_size", cls.hidden_size) // raw.get(
                "num_attention_heads", cls.num_attention_heads
            )
        cfg = cls(**values)
        rope = raw.get("rope_scaling") or {}
        if rope.get("rope_type", rope.get("type", "default")) != "default":
            raise ValueError(f"codec decoder: unsupported rope_scaling {rope}")
        if cfg.hidden_act != "silu":
            raise ValueError(f"codec decoder: unsupported hidden_act {cfg.hidden_act!r}")
        if cfg.num_quantizers != NUM_CODEBOOKS:
            raise ValueError(f"codec decoder: expected {NUM_CODEBOOKS} quantizers, config has {cfg.num_quantizers}")
        return cfg

    @property
    def samples_per_frame(self) -> int:
        return math.prod(self.upsample_rates) * math.prod(self.upsampling_ratios)


def speech_tokenizer_dir(path: str | Path) -> Path:
    """`path` itself if it is a speech_tokenizer folder, else its `speech_tokenizer/` subfolder."""
    path = Path(path)
    for candidate in (path, path / "speech_tokenizer"):
        config = candidate / "config.json"
        if config.exists() and json.loads(config.read_text()).get("model_type") == "qwen3_tts_tokenizer_12hz":
            return candidate
    raise CheckpointError(f"{path}: no speech tokenizer (config.json with model_type qwen3_tts_tokenizer_12hz)")


# ----------------------------------------------------------------------------------------------------------------
# Streaming state


@dataclass
class CodecState:
    """Everything the causal decoder carries between chunks, for `num_slots` streams (row = slot)."""

    positions: torch.Tensor  # [N] absolute position of each stream's next frame
    key: torch.Tensor  # [layers, N, kv_heads, window, head_dim] post-RoPE keys, oldest first
    value: torch.Tensor  # [layers, N, kv_heads, window, head_dim]
    key_positions: torch.Tensor  # [N, window] absolute frame position of each window entry, -1 = empty
    history: list[torch.Tensor]  # per stateful conv (in forward order): [N, channels, context] last input samples

    @property
    def num_slots(self) -> int:
        return self.positions.shape[0]

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor of the state (row = slot in each)."""
        return [self.positions, self.key, self.value, self.key_positions, *self.history]

    def nbytes_per_slot(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors()) // self.num_slots

    def store(
        self,
        rows: torch.Tensor,
        frames: torch.Tensor,
        windows: "StepWindows",
        key_positions: torch.Tensor,
        batch: "_Batch",
    ) -> None:
        """Write one step's results back into rows `rows`: advance positions by `frames`, new window, conv history."""
        self.positions[rows] += frames
        windows.store()
        self.key_positions[rows] = key_positions
        batch.store()


class StepWindows:
    """The transformer's K/V windows of one step's rows (the PyTorch path): the rows' windows copied in, each layer's
    [past ‖ new] keys built by concatenation, each row's new window gathered just behind its valid end."""

    def __init__(self, state: CodecState, rows: torch.Tensor, frames: torch.Tensor):
        self.state, self.rows, self.frames = state, rows, frames
        self.window = state.key.shape[3]
        # Each row's new window: the `window` entries just before its valid end in [past ‖ new].
        self.keep_index = frames[:, None] + torch.arange(self.window, device=frames.device)[None, :]  # [B, W]
        self.read()

    def read(self) -> None:
        self.past_key, self.past_value = self.state.key[:, self.rows], self.state.value[:, self.rows]
        self.new_key: list[torch.Tensor] = []
        self.new_value: list[torch.Tensor] = []

    def around(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """k, v [B, kv, T, D] -> this layer's keys and values [B, kv, window + T, D], the past window first."""
        return torch.cat([self.past_key[layer], k], dim=2), torch.cat([self.past_value[layer], v], dim=2)

    def keep(self, layer: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Take each row's new window out of this layer's keys and values."""
        idx = self.keep_index[:, None, :, None].expand(-1, keys.shape[1], -1, keys.shape[3])
        self.new_key.append(keys.gather(2, idx))
        self.new_value.append(values.gather(2, idx))

    def store(self) -> None:
        self.state.key[:, self.rows] = torch.stack(self.new_key)
        self.state.value[:, self.rows] = torch.stack(self.new_value)


class StepWindowsInPlace(StepWindows):
    """StepWindows by `kernels/codec_window.copy_windows` (CUDA, or the Triton interpreter): a layer's past window
    goes from the state's rows straight into its [past ‖ new] buffer, and its new window straight back into the
    state's rows once the layer has attended (no other layer reads it). Copies: the same bits as StepWindows."""

    def read(self) -> None:
        pass  # each layer's window is read in `around`

    def around(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        from omni.kernels.codec_window import copy_windows

        out = []
        for past, new in ((self.state.key[layer], k), (self.state.value[layer], v)):
            b, heads, t, dim = new.shape
            full = torch.empty(b, heads, self.window + t, dim, dtype=new.dtype, device=new.device)
            copy_windows(past, full, self.window, src_rows=self.rows)
            full[:, :, self.window :] = new
            out.append(full)
        return out[0], out[1]

    def keep(self, layer: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        from omni.kernels.codec_window import copy_windows

        for full, state in ((keys, self.state.key[layer]), (values, self.state.value[layer])):
            copy_windows(full, state, self.window, src_start=self.frames, dst_rows=self.rows)

    def store(self) -> None:
        pass  # each layer's window went back in `keep`


class StepWindowsPaired(StepWindowsInPlace):
    """StepWindowsInPlace with a layer's keys and values in one launch each way (`concat_windows` builds both
    [past ‖ new] buffers, `copy_windows` with a pair keeps both new windows): two kernels a layer instead of six.
    Copies: the same bits."""

    def around(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        from omni.kernels.codec_window import concat_windows

        return concat_windows(self.state.key[layer], self.state.value[layer], self.rows, k, v)

    def keep(self, layer: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        from omni.kernels.codec_window import copy_windows

        state_keys, state_values = self.state.key[layer], self.state.value[layer]
        copy_windows(
            keys, state_keys, self.window, src_start=self.frames, dst_rows=self.rows, pair=(values, state_values)
        )


class _Batch:
    """The conv histories of one step's state rows, read and replaced by the modules as the forward passes (the
    PyTorch path): every conv's rows gathered up front, each conv's [history ‖ new] buffer built by concatenation,
    its new history gathered just behind each row's valid end, all written back by `store`."""

    def __init__(self, state: CodecState, rows: torch.Tensor, frames: torch.Tensor):
        self.state, self.rows = state, rows
        self.frames = frames  # [B] valid frames per row
        self.history = self.read()

    def read(self) -> list[torch.Tensor]:
        return [h[self.rows] for h in self.state.history]

    def context(self, index: int) -> int:
        """The input samples conv number `index` carries."""
        return self.state.history[index].shape[-1]

    def step(self, index: int, x: torch.Tensor, per_frame: int) -> torch.Tensor:
        """[history ‖ x] for conv number `index`; keeps the last `context` samples before each row's valid end."""
        full = torch.cat([self.history[index], x], dim=-1)
        self.keep(index, full, per_frame)
        return full

    def buffer(
        self, index: int, x: torch.Tensor, empty: Callable[..., torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Conv number `index`'s [history ‖ new] input buffer for x [B, C, T] with the rows' history filled in (by
        `keep` in _BatchSwapped: call it before reading the buffer), and its new part (for the caller to write).
        `empty(batch, channels, length, like)` allocates it (default: a contiguous [B, C, context + T]; the
        channels-last vocoder passes its own)."""
        context = self.context(index)
        b, c, t = x.shape
        if empty is None:
            full = torch.empty(b, c, context + t, dtype=x.dtype, device=x.device)
        else:
            full = empty(b, c, context + t, x)
        self.fill(index, full)
        return full, full[..., context:]

    def fill(self, index: int, full: torch.Tensor) -> None:
        """The rows' history of conv number `index` into the head of its [history ‖ new] buffer `full`."""
        full[..., : self.context(index)] = self.history[index]

    def keep(self, index: int, full: torch.Tensor, per_frame: int) -> None:
        """Conv number `index`'s new history out of its [history ‖ new] buffer: row b's valid input ends at
        context + frames[b]*per_frame in `full`, its new history is the `context` samples just before that."""
        start = self.frames * per_frame
        idx = (start[:, None] + torch.arange(self.context(index), device=full.device)[None, :])[:, None, :]
        self.history[index] = full.gather(2, idx.expand(-1, full.shape[1], -1))

    def store(self) -> None:
        for h, new in zip(self.state.history, self.history, strict=True):
            h[self.rows] = new


class _BatchInPlace(_Batch):
    """_Batch by `kernels/codec_window.copy_history` (CUDA, or the Triton interpreter): a conv's history goes from
    the state's rows straight into its [history ‖ new] buffer, and its new history straight back into the state's
    rows (no other conv reads it): two kernels a conv instead of ~6. Copies: the same bits as _Batch."""

    def read(self) -> list[torch.Tensor]:
        return []  # each conv's history is read in `fill`

    def step(self, index: int, x: torch.Tensor, per_frame: int) -> torch.Tensor:
        full, new = self.buffer(index, x)
        new.copy_(x)
        self.keep(index, full, per_frame)
        return full

    def fill(self, index: int, full: torch.Tensor) -> None:
        from omni.kernels.codec_window import copy_history

        copy_history(self.state.history[index], full, self.context(index), src_rows=self.rows)

    def keep(self, index: int, full: torch.Tensor, per_frame: int) -> None:
        from omni.kernels.codec_window import copy_history

        history, context = self.state.history[index], self.context(index)
        copy_history(full, history, context, src_start=self.frames, start_scale=per_frame, dst_rows=self.rows)

    def store(self) -> None:
        pass  # each conv's history went back in `keep`


class _BatchSwapped(_BatchInPlace):
    """_BatchInPlace with each conv's history moved both ways by one launch (`kernels/codec_window.swap_history`):
    `buffer` leaves the [history ‖ new] buffer's head unwritten, and `keep`, which every caller runs once the new
    part is written and before the conv reads the buffer, fills the head from the state's rows and keeps the new
    history into them. One kernel a conv instead of two. Copies: the same bits as _Batch."""

    def fill(self, index: int, full: torch.Tensor) -> None:
        pass  # by `keep`, with the new history, in one launch

    def keep(self, index: int, full: torch.Tensor, per_frame: int) -> None:
        from omni.kernels.codec_window import swap_history

        swap_history(self.state.history[index], full, self.rows, self.frames, per_frame)


# ----------------------------------------------------------------------------------------------------------------
# Convolutions (each stateful one gets a slot in CodecState.history, assigned by CodecDecoder)


class CausalConv1d(nn.Module):
    """Conv1d with left padding (k-1)*dilation; streaming carries that many input samples."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, dilation: int = 1, groups: int = 1):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, dilation=dilation, groups=groups)
        self.context = (kernel_size - 1) * dilation
        self.state_index = -1
        self.per_frame = 1  # input samples per codec frame, set by CodecDecoder

    def forward(self, x: torch.Tensor, batch: _Batch) -> torch.Tensor:
        if self.context == 0:
            return self.conv(x)
        return self.conv(batch.step(self.state_index, x, self.per_frame))


class CausalConvTranspose1d(nn.Module):
    """ConvTranspose1d(k, stride s) with the last k-s outputs trimmed; k=2s carries one input sample."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int):
        super().__init__()
        if kernel_size not in (stride, 2 * stride):
            raise ValueError(f"transposed conv with kernel {kernel_size}, stride {stride} is not supported")
        self.conv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride)
        self.stride = stride
        self.context = 1 if kernel_size == 2 * stride else 0
        self.state_index = -1
        self.per_frame = 1

    def forward(self, x: torch.Tensor, batch: _Batch) -> torch.Tensor:
        if self.context == 0:
            return self.conv(x)
        # With the previous input prepended, output block j gets taps s..2s-1 of input j-1 and taps 0..s-1 of
        # input j; the first block (the carried sample's own taps) and the trimmed tail are dropped.
        y = self.conv(batch.step(self.state_index, x, self.per_frame))
        return y[..., self.stride : self.stride * (x.shape[-1] + 1)]


class SnakeBeta(nn.Module):
    """x + sin²(e^α·x) / (e^β + 1e-9), per channel."""

    def __init__(self, channels: int):
        super().__init__()
        self.alpha = nn.Parameter(torch.zeros(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        alpha = self.alpha.exp()[None, :, None]
        beta = self.beta.exp()[None, :, None]
        return x + (1.0 / (beta + 1e-9)) * torch.sin(x * alpha).pow(2)


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dwconv = CausalConv1d(dim, dim, 7, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor, batch: _Batch) -> torch.Tensor:
        h = self.dwconv(x, batch).transpose(1, 2)
        h = self.pwconv2(F.gelu(self.pwconv1(self.norm(h))))
        return x + (self.gamma * h).transpose(1, 2)


class ResidualUnit(nn.Module):
    def __init__(self, dim: int, dilation: int):
        super().__init__()
        self.act1 = SnakeBeta(dim)
        self.conv1 = CausalConv1d(dim, dim, 7, dilation=dilation)
        self.act2 = SnakeBeta(dim)
        self.conv2 = CausalConv1d(dim, dim, 1)

    def forward(self, x: torch.Tensor, batch: _Batch) -> torch.Tensor:
        h = self.conv1(self.act1(x), batch)
        return x + self.conv2(self.act2(h), batch)


class VocoderBlock(nn.Module):
    """SnakeBeta -> transposed conv (x rate, channels halved) -> residual units with dilation 1, 3, 9."""

    def __init__(self, in_dim: int, out_dim: int, rate: int):
        super().__init__()
        self.block = nn.ModuleList(
            [SnakeBeta(in_dim), CausalConvTranspose1d(in_dim, out_dim, 2 * rate, rate)]
            + [ResidualUnit(out_dim, d) for d in (1, 3, 9)]
        )

    def forward(self, x: torch.Tensor, batch: _Batch) -> torch.Tensor:
        x = self.block[1](self.block[0](x), batch)
        for unit in self.block[2:]:
            x = unit(x, batch)
        return x


# ----------------------------------------------------------------------------------------------------------------
# RVQ decode


class _Codebook(nn.Module):
    def __init__(self, size: int, dim: int):
        super().__init__()
        self.cluster_usage = nn.Parameter(torch.ones(size))
        self.embedding_sum = nn.Parameter(torch.zeros(size, dim))

    def usage(self) -> torch.Tensor:
        """Each code's usage count, floored as the official decoder floors it before dividing by it."""
        return self.cluster_usage.clamp(min=1e-5)


class _VQ(nn.Module):
    def __init__(self, size: int, dim: int):
        super().__init__()
        self._codebook = _Codebook(size, dim)


class _VQLayers(nn.Module):
    def __init__(self, n: int, size: int, dim: int):
        super().__init__()
        self.layers = nn.ModuleList([_VQ(size, dim) for _ in range(n)])


class ResidualVQ(nn.Module):
    """One RVQ group: sum of its codebook vectors (embedding_sum / cluster_usage), then a 1x1 output projection."""

    def __init__(self, n: int, size: int, dim: int, io_dim: int):
        super().__init__()
        self.input_proj = nn.Conv1d(io_dim, dim, 1, bias=False)  # encoder side; stored, unused here
        self.output_proj = nn.Conv1d(dim, io_dim, 1, bias=False)
        self.vq = _VQLayers(n, size, dim)
        # The codebooks looked up and summed by kernels/rvq_lookup.py (CUDA, or the Triton interpreter): the codec's
        # `rvq_kernel` setting. The same bits either way.
        self.lookup_kernel = False
        self._divided: tuple[tuple, torch.Tensor] | None = None

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        """codes [B, T, n] -> [B, io_dim, T]."""
        if self.lookup_kernel:
            from omni.kernels.rvq_lookup import lookup_sum

            total = lookup_sum(self.divided_codebooks(), codes)
        else:
            total = 0
            for i, vq in enumerate(self.vq.layers):
                book = vq._codebook
                usage = book.usage()[codes[..., i]]
                total = total + F.embedding(codes[..., i], book.embedding_sum) / usage[..., None]
        return self.output_proj(total.transpose(1, 2))

    def divided_codebooks(self) -> torch.Tensor:
        """[n, size, dim]: each codebook's embedding_sum / clamped usage, the rows forward's eager path divides per
        token (the same division, so the same bits). Computed again only when a codebook tensor changed: a weight
        load (in place: its version), a cast or a move (its storage or dtype)."""
        params = [t for vq in self.vq.layers for t in (vq._codebook.embedding_sum, vq._codebook.cluster_usage)]
        key = tuple((t.data_ptr(), t._version, t.dtype) for t in params)
        if self._divided is None or self._divided[0] != key:
            books = [vq._codebook for vq in self.vq.layers]
            tables = torch.stack([b.embedding_sum / b.usage()[:, None] for b in books])
            self._divided = (key, tables.detach())
        return self._divided[1]


class SplitRVQ(nn.Module):
    def __init__(self, cfg: CodecDecoderConfig):
        super().__init__()
        dim = cfg.codebook_dim // 2
        self.rvq_first = ResidualVQ(1, cfg.codebook_size, dim, cfg.codebook_dim)
        self.rvq_rest = ResidualVQ(cfg.num_quantizers - 1, cfg.codebook_size, dim, cfg.codebook_dim)

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        return self.rvq_first(codes[..., :1]) + self.rvq_rest(codes[..., 1:])


# ----------------------------------------------------------------------------------------------------------------
# Sliding-window transformer


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class LayerScale(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * x


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: CodecDecoderConfig):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        bias = cfg.attention_bias
        self.q_proj = nn.Linear(cfg.hidden_size, self.heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(cfg.hidden_size, self.kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(cfg.hidden_size, self.kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(self.heads * self.head_dim, cfg.hidden_size, bias=bias)
        # Read by the fused project only (codec_graphs._fused_codec_project): the decoder's `qk_rope_kernel`.
        self.qk_rope = False

    def project(self, x, cos, sin):
        """x [B,T,H] -> q [B,heads,T,D], k, v [B,kv,T,D], RoPE on q and k (cos/sin [B,1,T,D]). The codec's
        `transformer_kernels` replace it (codec_graphs.fuse_transformer)."""
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin, v

    def forward(self, x, cos, sin, around, attend):
        """x [B,T,H]; around(k, v) -> keys, values [B,kv,W+T,D] (the past window ahead of the new k, v [B,kv,T,D]);
        attend(q, keys, values) -> [B,T,heads,D] (WindowTransformer's masked attention) -> (out [B,T,H], keys,
        values)."""
        b, t, _ = x.shape
        q, k, v = self.project(x, cos, sin)
        keys, values = around(k, v)
        return self.o_proj(attend(q, keys, values).reshape(b, t, -1)), keys, values


class MLP(nn.Module):
    def __init__(self, cfg: CodecDecoderConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class TransformerLayer(nn.Module):
    def __init__(self, cfg: CodecDecoderConfig):
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn_layer_scale = LayerScale(cfg.hidden_size)
        self.mlp_layer_scale = LayerScale(cfg.hidden_size)

    def forward(self, x, cos, sin, around, attend):
        h, keys, values = self.self_attn(self.input_layernorm(x), cos, sin, around, attend)
        x = x + self.self_attn_layer_scale(h)
        x = x + self.mlp_layer_scale(self.mlp(self.post_attention_layernorm(x)))
        return x, keys, values


def window_mask(qpos: torch.Tensor, kpos: torch.Tensor, window: int) -> torch.Tensor:
    """[B,1,T,L]: query t of row b sees key l where 0 <= qpos[b,t] - kpos[b,l] <= window and kpos[b,l] >= 0 (a fresh
    stream's past entries are at -1)."""
    diff = qpos[:, :, None] - kpos[:, None, :]
    return ((diff >= 0) & (diff <= window) & (kpos[:, None, :] >= 0))[:, None]


def masked_attention(q, keys, values, mask):
    """SDPA of q [B,heads,T,D] over keys, values [B,kv,W+T,D] under mask [B,1,T,W+T] -> [B,T,heads,D]; the eager
    path `kernels/codec_attention.window_attention` replaces (the codec's `attention_kernel`)."""
    gqa = keys.shape[1] != q.shape[1]
    out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=gqa, scale=q.shape[-1] ** -0.5)
    return out.transpose(1, 2)


class WindowTransformer(nn.Module):
    """8 causal layers with a sliding window (current frame + window-1 past frames), RoPE on absolute positions."""

    def __init__(self, cfg: CodecDecoderConfig):
        super().__init__()
        self.window = cfg.sliding_window - 1
        self.input_proj = nn.Linear(cfg.latent_dim, cfg.hidden_size)
        self.layers = nn.ModuleList([TransformerLayer(cfg) for _ in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.output_proj = nn.Linear(cfg.hidden_size, cfg.latent_dim)
        inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float32) / cfg.head_dim))
        # RoPE's frequency of every column, both halves (NeoX layout): a step's angles are then one product
        self.register_buffer("rope_freq", torch.cat([inv_freq, inv_freq]), persistent=False)
        # Attention by kernels/codec_attention.py (CUDA, or the Triton interpreter) instead of SDPA over a mask: the
        # codec's `attention_kernel` setting. Not bitwise: the sums run in another order.
        self.attention_kernel = False

    def forward(self, x, positions, windows: StepWindows, key_positions):
        """x [B,T,latent]; positions [B] of x[:,0]; windows: the rows' K/V windows (and their valid frames);
        key_positions [B,W].

        Returns (y [B,T,latent], new key_positions); `windows` holds each layer's new window, each row's ending at
        its last valid frame.
        """
        b, t, _ = x.shape
        qpos = positions[:, None] + torch.arange(t, device=x.device)[None, :]  # [B, T]
        # [B, 1, T, D] in fp32 whatever the module's dtype (rope_freq, a buffer, follows it: an integer times a bf16
        # tensor would be bf16)
        angles = qpos[:, None, :, None].float() * self.rope_freq
        # cos and sin in fp32, each stored in x's dtype by the same kernel: the same bits as a cast after it
        cos = torch.cos(angles, out=torch.empty_like(angles, dtype=x.dtype))
        sin = torch.sin(angles, out=torch.empty_like(angles, dtype=x.dtype))
        kpos = torch.cat([key_positions, qpos], dim=1)  # [B, W+T]
        if self.attention_kernel:
            from omni.kernels.codec_attention import window_attention

            attend = functools.partial(window_attention, qpos=qpos, kpos=kpos, window=self.window)
        else:
            attend = functools.partial(masked_attention, mask=window_mask(qpos, kpos, self.window))  # one mask a step
        y = self.output_proj(self.run_layers(self.input_proj(x), cos, sin, windows, attend))
        return y, kpos.gather(1, windows.keep_index)

    def run_layers(self, h, cos, sin, windows: StepWindows, attend) -> torch.Tensor:
        """The layers and the final norm: h [B,T,H] -> the normed output [B,T,H], each layer's new window kept in
        `windows`. The codec's `add_norm_kernel` replaces it (codec_graphs.fused_run_layers)."""
        for i, layer in enumerate(self.layers):
            h, keys, values = layer(h, cos, sin, functools.partial(windows.around, i), attend)
            windows.keep(i, keys, values)
        return self.norm(h)


# ----------------------------------------------------------------------------------------------------------------
# The decoder


class CodecDecoder(nn.Module):
    """codes [B, T, 16] -> waveform [B, T*1920] at 24 kHz; `decode_streams` for exact chunked streaming."""

    # Whole-utterance decode runs through the streaming path in chunks of this many frames (bounded attention
    # memory; chunking does not change the result).
    max_chunk_frames = 300

    def __init__(self, cfg: CodecDecoderConfig):
        super().__init__()
        self.cfg = cfg
        self.quantizer = SplitRVQ(cfg)
        self.pre_conv = CausalConv1d(cfg.codebook_dim, cfg.latent_dim, 3)
        self.pre_transformer = WindowTransformer(cfg)
        self.upsample = nn.ModuleList(
            [
                nn.ModuleList(
                    [CausalConvTranspose1d(cfg.latent_dim, cfg.latent_dim, r, r), ConvNeXtBlock(cfg.latent_dim)]
                )
                for r in cfg.upsampling_ratios
            ]
        )
        dims = [cfg.decoder_dim // 2**i for i in range(len(cfg.upsample_rates) + 1)]
        self.decoder = nn.ModuleList(
            [CausalConv1d(cfg.latent_dim, cfg.decoder_dim, 7)]
            + [VocoderBlock(dims[i], dims[i + 1], r) for i, r in enumerate(cfg.upsample_rates)]
            + [SnakeBeta(dims[-1]), CausalConv1d(dims[-1], 1, 7)]
        )
        self._assign_state_slots()
        # The K/V windows through kernels/codec_window.py (CUDA, or the Triton interpreter): the codec's
        # `window_kernel` setting. The same bits either way.
        self.window_kernel = False
        # With the channels-last vocoder, each residual unit's closing add (x + conv2 + bias) also writes the next
        # SnakeBeta, saving that SnakeBeta's read: the codec's `residual_snake_kernel`. The same bits either way.
        self.residual_snake_kernel = False
        # With the channels-last vocoder, each residual unit's second SnakeBeta, 1x1 conv2 and closing add as one
        # Triton GEMM (kernels/unit_tail.py): the codec's `unit_tail_kernel`. Sums in another order than cuDNN.
        self.unit_tail_kernel = False
        # The conv histories through kernels/codec_window.copy_history (CUDA, or the Triton interpreter): the codec's
        # `history_kernel` setting. The same bits either way.
        self.history_kernel = False
        # A layer's K and V windows by one kernel launch each way (StepWindowsPaired) instead of window_kernel's
        # three each: the codec's `window_pair_kernel`. The same bits either way.
        self.window_pair_kernel = False
        # Each conv's history into its buffer and its new history back by one kernel launch (_BatchSwapped) instead
        # of history_kernel's two: the codec's `history_swap_kernel`. The same bits either way.
        self.history_swap_kernel = False
        # With the channels-last vocoder, the upsamplers in [B, T, C] memory as well: no layout conversions around
        # their convs, and the ConvNeXt blocks' LayerNorm reads a contiguous tensor, not a transposed view. The
        # codec's `upsample_channels_last` (codec_graphs.ChannelsLastVocoder.upsample).
        self.upsample_channels_last = False
        # With the channels-last vocoder (and without unit_tail_kernel), each residual unit's dilated k=7 conv1
        # (dilations 3 and 9), its bias and the SnakeBeta after it as one Triton implicit GEMM (kernels/vocoder_conv.py)
        # instead of cuDNN's conv and a SnakeBeta pass: the codec's `conv1_kernel`. Sums in another order than cuDNN.
        self.conv1_kernel = False
        # With the channels-last vocoder (and without unit_tail_kernel), each residual unit's 1x1 conv2, the residual
        # add and (with residual_snake_kernel) the next SnakeBeta as one pass of the same implicit GEMM
        # (vocoder_conv_residual) instead of cuDNN's conv and bias_residual_cl: the codec's `conv2_kernel`. Sums in
        # another order than cuDNN.
        self.conv2_kernel = False
        # With the channels-last vocoder, each vocoder block's transposed conv (kernel 2r, stride r) as the same
        # implicit GEMM: a 2-tap conv over [history ‖ new] with r*C_out columns, one per (phase, channel)
        # (vocoder_conv.transposed_matrix) instead of cuDNN's transposed conv and a slice, its epilogue also writing
        # the first residual unit's SnakeBeta: the codec's `transposed_kernel`. Sums in another order than cuDNN.
        self.transposed_kernel = False

    # The decoder's kernel switches: boolean properties, each the codec setting of the same name, independent of
    # one another (engine_from_config and bench_codec --ab set them by these names).
    KERNEL_SWITCHES = (
        "window_kernel",
        "rvq_kernel",
        "attention_kernel",
        "transformer_kernels",
        "residual_snake_kernel",
        "unit_tail_kernel",
        "history_kernel",
        "add_norm_kernel",
        "window_pair_kernel",
        "qk_rope_kernel",
        "history_swap_kernel",
        "upsample_channels_last",
        "conv1_kernel",
        "conv2_kernel",
        "transposed_kernel",
    )

    @property
    def qk_rope_kernel(self) -> bool:
        """With transformer_kernels: RoPE of a layer's q and k by one launch over the adjacent q|k columns of the
        fused q/k/v projection instead of one each (codec_graphs._fused_codec_project; the codec's `qk_rope_kernel`).
        The same bits; no effect on the eager transformer."""
        return self.pre_transformer.layers[0].self_attn.qk_rope

    @qk_rope_kernel.setter
    def qk_rope_kernel(self, on: bool) -> None:
        for layer in self.pre_transformer.layers:
            layer.self_attn.qk_rope = on

    @property
    def add_norm_kernel(self) -> bool:
        """The transformer's residual adds (with their LayerScale) each in one kernel with the RMSNorm after it
        (codec_graphs.fused_run_layers; the codec's `add_norm_kernel`)."""
        return "run_layers" in self.pre_transformer.__dict__

    @add_norm_kernel.setter
    def add_norm_kernel(self, on: bool) -> None:
        from omni.models.qwen3_tts.codec_graphs import fused_run_layers

        if on:
            self.pre_transformer.run_layers = types.MethodType(fused_run_layers, self.pre_transformer)
        else:
            self.pre_transformer.__dict__.pop("run_layers", None)  # the class's again

    @property
    def transformer_kernels(self) -> bool:
        """The transformer through the talker's fused kernels (the codec's `transformer_kernels`): on while any of
        its modules is fused (codec_graphs.fuse_transformer / unfuse_transformer, in place)."""
        return any(getattr(m, "fused", False) for m in self.pre_transformer.modules())

    @transformer_kernels.setter
    def transformer_kernels(self, on: bool) -> None:
        from omni.models.qwen3_tts.codec_graphs import fuse_transformer, unfuse_transformer

        (fuse_transformer if on else unfuse_transformer)(self)

    @property
    def attention_kernel(self) -> bool:
        """The transformer's attention through kernels/codec_attention.py (the codec's `attention_kernel`)."""
        return self.pre_transformer.attention_kernel

    @attention_kernel.setter
    def attention_kernel(self, on: bool) -> None:
        self.pre_transformer.attention_kernel = on

    @property
    def rvq_kernel(self) -> bool:
        """The RVQ decode through kernels/rvq_lookup.py (the codec's `rvq_kernel` setting; the same bits)."""
        return self.quantizer.rvq_first.lookup_kernel

    @rvq_kernel.setter
    def rvq_kernel(self, on: bool) -> None:
        for group in (self.quantizer.rvq_first, self.quantizer.rvq_rest):
            group.lookup_kernel = on

    def _assign_state_slots(self) -> None:
        """Give every stateful conv its index in CodecState.history and its input samples per frame."""
        per_frame = 1
        self.stateful: list[CausalConv1d | CausalConvTranspose1d] = []

        def visit(module: nn.Module, rate: int) -> None:
            module.per_frame = rate
            if module.context > 0:
                module.state_index = len(self.stateful)
                self.stateful.append(module)

        visit(self.pre_conv, per_frame)
        for transposed, convnext in self.upsample:
            visit(transposed, per_frame)
            per_frame *= transposed.stride
            visit(convnext.dwconv, per_frame)
        visit(self.decoder[0], per_frame)
        for block in self.decoder[1:-2]:
            visit(block.block[1], per_frame)
            per_frame *= block.block[1].stride
            for unit in block.block[2:]:
                visit(unit.conv1, per_frame)
                visit(unit.conv2, per_frame)
        visit(self.decoder[-1], per_frame)
        assert per_frame == self.cfg.samples_per_frame
        # Receptive field of the conv stack after the transformer, in frames: its state after a sequence depends
        # only on that sequence's last `prime_tail_frames` transformer outputs (see prime_streams).
        field = sum(m.context / m.per_frame for m in self.stateful if m is not self.pre_conv)
        self.prime_tail_frames = math.ceil(field) + 1

    @property
    def samples_per_frame(self) -> int:
        return self.cfg.samples_per_frame

    # ---- state ----

    def new_state(self, num_slots: int) -> CodecState:
        """Zeroed state for `num_slots` streams, on the decoder's device and in its dtype."""
        p = next(self.parameters())
        cfg = self.cfg
        window = cfg.sliding_window - 1
        kv_shape = (cfg.num_hidden_layers, num_slots, cfg.num_key_value_heads, window, cfg.head_dim)
        return CodecState(
            positions=torch.zeros(num_slots, dtype=torch.long, device=p.device),
            key=torch.zeros(kv_shape, dtype=p.dtype, device=p.device),
            value=torch.zeros(kv_shape, dtype=p.dtype, device=p.device),
            key_positions=torch.full((num_slots, window), -1, dtype=torch.long, device=p.device),
            history=[
                torch.zeros(num_slots, m.conv.in_channels, m.context, dtype=p.dtype, device=p.device)
                for m in self.stateful
            ],
        )

    def reset(self, state: CodecState, slot: int) -> None:
        """Forget everything stream `slot` has seen: it decodes like a fresh stream from position 0."""
        self.reset_streams(state, [slot])

    def reset_streams(self, state: CodecState, slots: Sequence[int]) -> None:
        """`reset` of several streams: one indexed write per state tensor however many streams, and no host sync."""
        if not slots:
            return
        rows = to_device(torch.tensor(slots, dtype=torch.long), state.positions.device)
        state.positions[rows] = 0
        state.key[:, rows] = 0
        state.value[:, rows] = 0
        state.key_positions[rows] = -1
        for h in state.history:
            h[rows] = 0

    def prime(self, state: CodecState, slot: int, ref_codes: torch.Tensor) -> None:
        """Feed reference codes [T,16] as left context of stream `slot`; their audio is not returned."""
        self.prime_streams(state, [slot], [ref_codes])

    def prime_streams(self, state: CodecState, slots: list[int], ref_codes: list[torch.Tensor]) -> None:
        """Batched `prime`. The state ends exactly as after `decode_streams`, but the conv stack after the
        transformer only runs over each row's last `prime_tail_frames` frames: its state cannot depend on more
        (receptive field), so a long reference costs the vocoder a few frames instead of all of them."""
        self._run(state, slots, ref_codes, emit=False)

    def decode_streams(self, state: CodecState, slots: list[int], chunks: list[torch.Tensor]) -> list[torch.Tensor]:
        """Decode the next chunk [t_i, 16] of each stream `slots[i]` in one batched call -> [t_i * 1920] each."""
        return self._run(state, slots, chunks, emit=True)

    @torch.no_grad()
    def _run(self, state: CodecState, slots: list[int], chunks: list[torch.Tensor], emit: bool) -> list[torch.Tensor]:
        if len(slots) != len(chunks):
            raise ValueError(f"decode_streams: {len(slots)} slots but {len(chunks)} chunks")
        if len(set(slots)) != len(slots):
            raise ValueError(f"decode_streams: a slot appears twice in {slots}")
        for s in slots:
            if not 0 <= s < state.num_slots:
                raise ValueError(f"decode_streams: slot {s} outside 0..{state.num_slots - 1}")
        for c in chunks:
            self._check_codes(c, dims=2, check_range=False)
        if not slots:
            return []
        device = state.positions.device
        lengths = [c.shape[0] for c in chunks]
        spf = self.samples_per_frame
        if max(lengths) == 0:
            return [torch.zeros(0, dtype=state.key.dtype, device=device) for _ in chunks]
        # Right-padded with code 0 (a valid code); one range check for the whole batch.
        codes = pad_sequence([c.to(device=device, dtype=torch.long) for c in chunks], batch_first=True)
        self._check_codes(codes, dims=3)
        frames = torch.tensor(lengths, dtype=torch.long, device=device)
        rows = torch.tensor(slots, dtype=torch.long, device=device)
        batch = self.step_history(state, rows, frames)

        x, windows, key_positions = self._front(codes, batch, state, rows)
        if not emit:  # priming: only the last prime_tail_frames frames of each row go through the conv stack
            tail = frames.clamp(max=self.prime_tail_frames)
            idx = (frames - tail)[:, None] + torch.arange(min(x.shape[-1], self.prime_tail_frames), device=device)
            x = x.gather(2, idx[:, None, :].expand(-1, x.shape[1], -1))
            batch.frames = tail
        wav = self._back(x, batch)
        state.store(rows, frames, windows, key_positions, batch)
        return [wav[i, : n * spf] for i, n in enumerate(lengths)] if emit else []

    @torch.no_grad()
    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        """Whole utterances: codes [B, T, 16] -> [B, T*1920]."""
        self._check_codes(codes, dims=3)
        b, t, _ = codes.shape
        state = self.new_state(b)
        slots = list(range(b))
        pieces = []
        for start in range(0, t, self.max_chunk_frames):
            part = codes[:, start : start + self.max_chunk_frames]
            pieces.append(torch.stack(self.decode_streams(state, slots, list(part))))
        if not pieces:
            return torch.zeros(b, 0, dtype=state.key.dtype, device=state.key.device)
        return torch.cat(pieces, dim=1)

    def step_windows(self, state: CodecState, rows: torch.Tensor, frames: torch.Tensor) -> StepWindows:
        """The transformer's K/V windows of a step over state rows `rows` with `frames` valid frames each (by the
        decoder's `window_pair_kernel`, else its `window_kernel`)."""
        if self.window_pair_kernel:
            return StepWindowsPaired(state, rows, frames)
        return (StepWindowsInPlace if self.window_kernel else StepWindows)(state, rows, frames)

    def step_history(self, state: CodecState, rows: torch.Tensor, frames: torch.Tensor) -> _Batch:
        """The conv histories of a step over state rows `rows` with `frames` valid frames each (by the decoder's
        `history_swap_kernel`, else its `history_kernel`)."""
        if self.history_swap_kernel:
            return _BatchSwapped(state, rows, frames)
        return (_BatchInPlace if self.history_kernel else _Batch)(state, rows, frames)

    def _front(self, codes, batch, state, rows, mark=lambda stage: None):
        """RVQ decode, pre_conv and the transformer of state rows `rows`: codes [B,T,16] -> ([B, latent, T], the
        step's K/V windows, new key positions); `mark("rvq")` after the RVQ decode (codec_step's stage marks)."""
        x = self.quantizer(codes)  # [B, codebook_dim, T]
        mark("rvq")
        x = self.pre_conv(x, batch).transpose(1, 2)
        windows = self.step_windows(state, rows, batch.frames)
        positions, key_positions = state.positions[rows], state.key_positions[rows]
        x, key_positions = self.pre_transformer(x, positions, windows, key_positions)
        return x.transpose(1, 2), windows, key_positions

    def _back(self, x: torch.Tensor, batch: _Batch) -> torch.Tensor:
        """Upsamplers and vocoder: [B, latent, T] -> waveform [B, T*1920] in [-1, 1]."""
        x = self._upsample(x, batch)
        x = self.decoder[0](x, batch)
        for block in self.decoder[1:-2]:
            x = block(x, batch)
        x = self.decoder[-1](self.decoder[-2](x), batch)
        return x.clamp(-1, 1)[:, 0]

    def _upsample(self, x: torch.Tensor, batch: _Batch) -> torch.Tensor:
        """The upsamplers: [B, latent, T] -> [B, latent, 4T]."""
        for transposed, convnext in self.upsample:
            x = convnext(transposed(x, batch), batch)
        return x

    def _check_codes(self, codes: torch.Tensor, dims: int, check_range: bool = True) -> None:
        if not isinstance(codes, torch.Tensor) or codes.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"codec codes must be an integer tensor, got {getattr(codes, 'dtype', type(codes))}")
        if codes.dim() != dims or codes.shape[-1] != NUM_CODEBOOKS:
            want = "[B, T, 16]" if dims == 3 else "[T, 16]"
            raise ValueError(f"codec codes must have shape {want}, got {list(codes.shape)}")
        if check_range and codes.numel() and (int(codes.min()) < 0 or int(codes.max()) >= self.cfg.codebook_size):
            raise ValueError(
                f"codec codes must lie in [0, {self.cfg.codebook_size}), got [{int(codes.min())}, {int(codes.max())}]"
            )


def state_bytes_per_slot(cfg: CodecDecoderConfig | None = None, dtype: torch.dtype = torch.bfloat16) -> int:
    """Bytes of streaming state per slot (K/V window, conv histories, positions) for `cfg` (default: released)."""
    cfg = cfg or CodecDecoderConfig()
    with torch.device("meta"):
        decoder = CodecDecoder(cfg).to(dtype)
        return decoder.new_state(1).nbytes_per_slot()


def load_codec_decoder(
    path: str | Path, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
) -> CodecDecoder:
    """CodecDecoder with the `decoder.` weights of a model folder or its `speech_tokenizer/` folder."""
    directory = speech_tokenizer_dir(path)
    raw = json.loads((directory / "config.json").read_text())
    cfg = CodecDecoderConfig.from_dict(raw.get("decoder_config") or {})
    decoder = CodecDecoder(cfg)
    load_state_strict(decoder, split_prefix(read_safetensors(directory), "decoder."), f"{directory} decoder")
    return decoder.to(device=device, dtype=dtype).eval()
