"""CUDA graphs of the codec decode step, one per (batch bucket, chunk length), over the slots of one CodecState.

`CodecDecoder.decode_streams` launches a few hundred kernels per step from Python; at streaming chunk sizes the
GPU waits on those launches. Here the same step (`codec_step`: the math of `decode_streams` with its inputs
already on the device and no host work) is captured once per (bucket, chunk length) and replayed.

Static inputs per graph: codes [bucket, chunk, 16], rows [bucket] (state slots), frames [bucket] (valid frames per
row). A call with fewer streams than its bucket fills the spare rows with the state's last slot, reserved as
scratch, and 0 frames: a row with 0 frames leaves its state unchanged, so all scratch rows write back the same
values. A call whose chunks are shorter than the graph's chunk length is right-padded, exactly as
`decode_streams` pads (every layer is causal and each row's state is taken behind its own valid end).

A step need not fit one graph: `plan_replays` splits its streams over several replays at the least summed replay
time, by the times measured right after capture (a dynamic program over the rows, longest first). So a first chunk
of 1 frame is not padded to 15 when a replay of short chunks costs less than the padding, 263 streams take 256 + 16
rather than one 640-row replay, and a replay's spare rows take shorter chunks at no extra cost.
"""

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from omni.device import to_device
from omni.models.qwen3_tts.codec import (
    MLP,
    NUM_CODEBOOKS,
    Attention,
    CausalConv1d,
    CausalConvTranspose1d,
    CodecDecoder,
    CodecState,
    ConvNeXtBlock,
    ResidualUnit,
    RMSNorm,
    SnakeBeta,
    WindowTransformer,
    _Batch,
)

# The vocoder blocks (by position) whose upsampler `transposed_kernel` runs as the implicit GEMM with the first
# SnakeBeta in its epilogue; the others stay cuDNN's transposed conv + snakebeta_cl. On an H100 (runs 234 and 239,
# each width's tiles) the GEMM + SnakeBeta took, of cuDNN + SnakeBeta's time, at 128x1 / 64x4 / 128x15: block 0
# (1,536 channels, where cuDNN ran an sm80 kernel) 0.66 / 0.66 / 0.70; block 1 (768) 1.26 / 0.88 / 1.10; block 2 (384)
# 0.99 / 0.90 / 0.87; block 3 (192) 1.00 / 0.95 / 0.93.
TRANSPOSED_GEMM_BLOCKS = (0, 2, 3)


def codec_step(
    decoder: CodecDecoder,
    state: CodecState,
    codes: torch.Tensor,
    rows: torch.Tensor,
    frames: torch.Tensor,
    mark: Callable[[str], None] | None = None,
) -> torch.Tensor:
    """One decode step of rows `rows` on device tensors: codes [B, T, 16] -> waveform [B, T*1920]; updates state.

    Same math as `CodecDecoder.decode_streams` (no checks, no host work), so it can be captured in a CUDA graph.
    `mark(stage)` is called after each stage (the benchmark records CUDA events there).
    """
    mark = mark or (lambda stage: None)
    vocoder = getattr(decoder, "channels_last_vocoder", None)
    batch = decoder.step_history(state, rows, frames)
    x, windows, key_positions = decoder._front(codes, batch, state, rows, mark)
    mark("transformer")
    x = vocoder.upsample(x, batch) if vocoder is not None else decoder._upsample(x, batch)
    mark("upsample")
    if vocoder is not None:
        wav = vocoder.run(x, batch, mark)
    else:
        x = decoder.decoder[0](x, batch)
        mark("vocoder.in_conv")
        for i, block in enumerate(decoder.decoder[1:-2]):
            x = block(x, batch)
            mark(f"vocoder.block{i}")
        wav = decoder.decoder[-1](decoder.decoder[-2](x), batch).clamp(-1, 1)[:, 0]
    state.store(rows, frames, windows, key_positions, batch)
    mark("vocoder.out")
    return wav


def fuse_snakebeta(decoder: CodecDecoder) -> int:
    """Run every SnakeBeta of `decoder` through the fused Triton kernel (CUDA only); returns how many."""
    from omni.kernels.snakebeta import snakebeta

    count = 0
    for module in decoder.modules():
        if isinstance(module, SnakeBeta):
            module.forward = lambda x, m=module: snakebeta(x, m.alpha, m.beta)
            count += 1
    return count


def fuse_transformer(decoder: CodecDecoder) -> int:
    """Run the codec's sliding-window transformer with the talker's fused kernels (CUDA, or the Triton interpreter), in
    place and idempotent; returns how many modules changed. Each RMSNorm is one kernel, q/k/v one GEMM over concatenated
    weights (the Linears' weights become views of it: `state_dict()` is unchanged) with RoPE one kernel per tensor,
    gate/up one GEMM with SiLU·up one kernel: ~45 kernels a layer -> ~20 (docs/perf-notes.md, session 23). The kernels
    keep the eager roundings (RoPE to the bit, on the GPU too since its products are explicit `mul.rn`s, run 120; a
    norm's sum in another order), and the one GEMM may round differently from three. Call after the decoder is on its
    device and dtype."""
    from omni.models.qwen3_tts.talker_fused import fuse_modules

    for module in decoder.pre_transformer.modules():
        if isinstance(module, Attention) and any(
            m.bias is not None for m in (module.q_proj, module.k_proj, module.v_proj)
        ):
            raise ValueError("fuse_transformer: q/k/v projections with a bias are not supported")
    return fuse_modules(decoder.pre_transformer.modules(), (Attention, MLP, RMSNorm), _fused_codec_project)


def unfuse_transformer(decoder: CodecDecoder) -> int:
    """Undo fuse_transformer: each fused module's eager forward (or project) again, the same bits as never fused;
    returns how many changed. The q/k/v and gate/up weights stay views of their concatenations (the same values).
    For bench_codec's in-process A/B."""
    changed = 0
    for module in decoder.pre_transformer.modules():
        if getattr(module, "fused", False):
            for name in ("project", "forward"):  # the instance methods fuse_modules bound over the class's
                module.__dict__.pop(name, None)
            module.fused = False
            changed += 1
    return changed


def _fused_codec_project(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple:
    """codec.Attention.project with one q/k/v GEMM and RoPE as one kernel per tensor, or with `qk_rope` one kernel
    for both (the same bits: the codec has no q/k norm, so its q and k heads are all alike to RoPE). The same shapes
    out; with `qk_rope` q and k are views of one [B, T, heads + kv_heads, D] tensor."""
    from omni.kernels.transformer_fused import rms_norm_rope

    b, t, _ = x.shape
    qkv = F.linear(x, self.qkv_weight)
    nq, nk = self.heads * self.head_dim, self.kv_heads * self.head_dim
    rope = cos.transpose(1, 2), sin.transpose(1, 2)  # [B, 1, T, D] -> [B, T, 1, D], the kernel's layout
    if self.qk_rope:
        qk = rms_norm_rope(qkv[..., : nq + nk].view(b, t, self.heads + self.kv_heads, self.head_dim), None, 0.0, *rope)
        q, k = qk[:, :, : self.heads], qk[:, :, self.heads :]
    else:
        q = rms_norm_rope(qkv[..., :nq].view(b, t, self.heads, self.head_dim), None, 0.0, *rope)
        k = rms_norm_rope(qkv[..., nq : nq + nk].view(b, t, self.kv_heads, self.head_dim), None, 0.0, *rope)
    v = qkv[..., nq + nk :].view(b, t, self.kv_heads, self.head_dim)
    return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)


def fused_run_layers(self: WindowTransformer, h, cos, sin, windows, attend) -> torch.Tensor:
    """WindowTransformer.run_layers with each residual add in one kernel with the RMSNorm that reads its sum (the
    codec's `add_norm_kernel`): the attention's, its LayerScale applied, with the layer's post-attention norm, the
    MLP's with the next layer's input norm (the last with the final norm). 32 kernels fewer a step. The eager
    roundings, the norms the fused RMSNorm's arithmetic (`transformer_kernels`): with those on, the same bits (on an
    H200 too since the LayerScale's product is an explicit mul.rn, run 120; run 119's FMA had not been)."""
    from omni.kernels.transformer_fused import add_rms_norm

    layers = self.layers
    x, h = h, layers[0].input_layernorm(h)
    for i, layer in enumerate(layers):
        attn, keys, values = layer.self_attn(h, cos, sin, functools.partial(windows.around, i), attend)
        windows.keep(i, keys, values)
        post = layer.post_attention_layernorm
        x, h = add_rms_norm(x, attn, post.weight, post.eps, scale=layer.self_attn_layer_scale.scale)
        after = layers[i + 1].input_layernorm if i + 1 < len(layers) else self.norm
        x, h = add_rms_norm(x, layer.mlp(h), after.weight, after.eps, scale=layer.mlp_layer_scale.scale)
    return h


def fuse_residual_units(decoder: CodecDecoder) -> int:
    """Run every vocoder ResidualUnit through `fused_residual_unit` (CUDA only); returns how many."""
    count = 0
    for module in decoder.modules():
        if isinstance(module, ResidualUnit):
            module.forward = lambda x, batch, m=module: fused_residual_unit(m, x, batch)
            count += 1
    return count


def fused_residual_unit(unit: ResidualUnit, x: torch.Tensor, batch: _Batch) -> torch.Tensor:
    """ResidualUnit.forward with its element-wise work in two Triton kernels instead of six passes.

    Eager: snake(x); cat([history, .]); conv1 + bias; snake; conv2 + bias; + x. Here the first SnakeBeta writes
    straight into the [history ‖ new] buffer (no cat), conv1's bias is added inside the second SnakeBeta, and
    conv2's bias with the residual add in one pass.
    """
    from omni.kernels.snakebeta import bias_residual, snakebeta

    conv1, conv2 = unit.conv1, unit.conv2
    full, new = batch.buffer(conv1.state_index, x)
    snakebeta(x, unit.act1.alpha, unit.act1.beta, out=new)
    batch.keep(conv1.state_index, full, conv1.per_frame)
    h = F.conv1d(full, conv1.conv.weight, None, dilation=conv1.conv.dilation)
    h = snakebeta(h, unit.act2.alpha, unit.act2.beta, bias=conv1.conv.bias)
    return bias_residual(x, F.conv1d(h, conv2.conv.weight), conv2.conv.bias)


class ChannelsLastVocoder:
    """The vocoder (in-conv, blocks, final SnakeBeta + conv) with every activation in [B, T, C] memory.

    cuDNN's conv kernels are NHWC; fed [B, C, T] activations it converts layouts around every conv (18% of the fused
    step at 256x15). Here each Conv1d runs as a conv2d over [B, C, 1, T] in torch.channels_last memory, with weights
    converted once (copies: call after the decoder is on its device and dtype), so nothing is converted: the
    activations are [B, C, T] tensors with strides (., 1, C). SnakeBeta and the residual adds run through the
    channels-last Triton kernels (kernels/channels_last.py); conv histories are [history ‖ new] buffers along T.
    Every conv bias is folded into the next kernel: the in-conv's and each transposed conv's into the following
    SnakeBeta (and, for the transposed conv, into the first residual unit's residual add), conv1's into the second
    SnakeBeta, conv2's into the residual add. With the decoder's `residual_snake_kernel` that residual add also
    writes the SnakeBeta that follows it into the next conv's buffer (`next_snake`), the same bits. The state layout
    (CodecState) is the default one, so a state can be shared with the default path; its rows are converted on the
    way in and out (a few samples per conv).
    `fast_sine`: SnakeBeta with sin.approx instead of libdevice's sinf (bf16/fp16 only; kernels/channels_last.py).
    """

    def __init__(self, decoder: CodecDecoder, fast_sine: bool = False):
        self.decoder = decoder
        self.fast_sine = fast_sine
        self.weights: dict[nn.Module, torch.Tensor] = {}
        self.upsample_weights: dict[nn.Module, torch.Tensor] = {}
        for module in decoder.decoder.modules():
            if isinstance(module, nn.Conv1d | nn.ConvTranspose1d):
                if module.groups != 1 or any(module.padding):
                    raise ValueError(f"channels-last vocoder: conv {module} has groups or padding (not in this model)")
                self.weights[module] = _channels_last_weight(module)
        # The upsamplers' convs (transposed, depthwise) the same way, for the decoder's `upsample_channels_last`.
        for transposed, convnext in decoder.upsample:
            for module in (transposed.conv, convnext.dwconv.conv):
                self.upsample_weights[module] = _channels_last_weight(module)
        # x + conv2(h) + b2 where x still lacks its transposed conv's bias bT: one bias bT + b2 (fp32) instead.
        self.first_unit_bias: dict[ResidualUnit, torch.Tensor] = {}
        for block in decoder.decoder[1:-2]:
            up, unit = block.block[1], block.block[2]
            self.first_unit_bias[unit] = up.conv.bias.detach().float() + unit.conv2.conv.bias.detach().float()
        # What each residual unit's output feeds (the decoder's `residual_snake_kernel`): the vocoder's convs that
        # follow a SnakeBeta of a block's or unit's input, in order, each with its SnakeBeta and the unit it starts.
        chain: list[tuple[ResidualUnit | None, nn.Module, nn.Module]] = []
        for block in decoder.decoder[1:-2]:
            snake, up, *units = block.block
            chain += [(None, up, snake)] + [(unit, unit.conv1, unit.act1) for unit in units]
        chain.append((None, decoder.decoder[-1], decoder.decoder[-2]))
        self.next_snake: dict[ResidualUnit, tuple[nn.Module, nn.Module]] = {
            unit: chain[k + 1][1:] for k, (unit, _, _) in enumerate(chain) if unit is not None
        }
        # conv2 of each unit as a GEMM's [C_in, C_out] matrix (the decoder's `unit_tail_kernel` and `conv2_kernel`)
        from omni.kernels.unit_tail import conv2_matrix

        self.conv2_matrices = {unit: conv2_matrix(unit.conv2.conv.weight.detach()) for unit in self.next_snake}
        # The implicit GEMM's convs (kernels/vocoder_conv.py), each where its widths fit the kernel (`fits`; else
        # cuDNN's). conv2 of each unit with the matrix above (the decoder's `conv2_kernel`); conv1 of each unit with
        # dilation 3 or 9 as a [7*C_in, C_out] matrix (`conv1_kernel`; dilation 1 stays cuDNN's: there the GEMM with
        # SnakeBeta took 0.96-1.19x the time of cuDNN + SnakeBeta, at dilations 3 and 9 0.62-0.73x, run 233 on an
        # H100); the transposed conv of each block in TRANSPOSED_GEMM_BLOCKS as a 2-tap conv's [2*C_in, r*C_out]
        # matrix (`transposed_kernel`).
        from omni.kernels.vocoder_conv import conv_matrix, fits, transposed_matrix

        def fit(conv: nn.Conv1d | nn.ConvTranspose1d) -> bool:
            return fits(conv.in_channels, conv.out_channels)

        self.conv2_gemm = {unit for unit in self.next_snake if fit(unit.conv2.conv)}
        self.conv1_matrices = {
            unit: conv_matrix(unit.conv1.conv.weight.detach())
            for unit in self.next_snake
            if unit.conv1.conv.dilation[0] > 1 and fit(unit.conv1.conv)
        }
        upsamplers = [block.block[1] for block in decoder.decoder[1:-2]]
        self.transposed_matrices = {
            up: transposed_matrix(up.conv.weight.detach(), up.stride)
            for i, up in enumerate(upsamplers)
            if i in TRANSPOSED_GEMM_BLOCKS and fit(up.conv)
        }

    def back(self, x: torch.Tensor, batch: _Batch) -> torch.Tensor:
        """CodecDecoder._back with this vocoder: `upsample`, then `run`."""
        return self.run(self.upsample(x, batch), batch, lambda stage: None)

    def upsample(self, x: torch.Tensor, batch: _Batch) -> torch.Tensor:
        """The upsamplers: the decoder's own (default layout), or with its `upsample_channels_last` in [B, T, C] memory
        (the transformer's output already lies so): each conv as a channels-last conv2d, the ConvNeXt block's
        LayerNorm and Linears on the [B, T, C] view, its residual add in that layout."""
        if not self.decoder.upsample_channels_last:
            return self.decoder._upsample(x, batch)
        for transposed, convnext in self.decoder.upsample:
            x = self._convnext(convnext, self._transposed(transposed, x), batch)
        return x

    def _transposed(self, up: CausalConvTranspose1d, x: torch.Tensor) -> torch.Tensor:
        """CausalConvTranspose1d.forward in channels-last memory, for an upsampler's (kernel = stride: no history)."""
        if up.context:
            raise ValueError(f"channels-last upsampler: transposed conv {up.conv} carries history (not in this model)")
        full = x.unsqueeze(2).contiguous(memory_format=torch.channels_last)  # a view unless x lies otherwise
        y = F.conv_transpose2d(full, self.upsample_weights[up.conv], up.conv.bias, stride=(1, up.stride))
        return self._channels_last(y)

    def _convnext(self, block: ConvNeXtBlock, x: torch.Tensor, batch: _Batch) -> torch.Tensor:
        """ConvNeXtBlock.forward in channels-last memory: x [B, C, T] with strides (., 1, C)."""
        dw = block.dwconv
        full = self._copy_into(dw, batch, x)
        y = F.conv2d(full.unsqueeze(2), self.upsample_weights[dw.conv], dw.conv.bias, groups=dw.conv.groups)
        h = self._channels_last(y).transpose(1, 2)  # [B, T, C], contiguous
        h = block.pwconv2(F.gelu(block.pwconv1(block.norm(h))))
        return x + (block.gamma * h).transpose(1, 2)

    def run(self, x: torch.Tensor, batch: _Batch, mark: Callable[[str], None]) -> torch.Tensor:
        """Vocoder: x [B, latent, T] (any layout) -> waveform [B, T*1920] in [-1, 1]; marks as codec_step."""
        blocks = self.decoder.decoder
        in_conv = blocks[0]
        full = self._copy_into(in_conv, batch, x)  # without upsample_channels_last the step's one layout conversion
        x, bias = self._conv(in_conv, full), in_conv.conv.bias  # bias pending: added by the next SnakeBeta
        mark("vocoder.in_conv")
        snaked = None  # the next conv's input buffer when the last residual add already wrote its SnakeBeta there
        for i, block in enumerate(blocks[1:-2]):
            snake, up, *units = block.block
            full = snaked if snaked is not None else self._snake_into(up, snake, x, bias, batch)
            # the conv's bias pending (the first unit's SnakeBeta and residual add add it); with the decoder's
            # transposed_kernel that SnakeBeta is already in the first unit's conv1 buffer
            (x, snaked), bias = self._transposed_conv(up, full, batch, units[0]), up.conv.bias
            for unit in units:
                x, snaked = self._residual_unit(unit, x, bias, batch, snaked)
                bias = None
            mark(f"vocoder.block{i}")
        snake, out_conv = blocks[-2], blocks[-1]
        full = snaked if snaked is not None else self._snake_into(out_conv, snake, x, bias, batch)
        return self._conv(out_conv, full, out_conv.conv.bias).clamp(-1, 1)[:, 0]

    def _transposed_conv(
        self, up: CausalConvTranspose1d, full: torch.Tensor, batch: _Batch, first: ResidualUnit
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """A vocoder block's transposed conv (no bias: the next SnakeBeta adds it) over its filled [history ‖ new]
        buffer: r new samples per new input sample, channels-last. With the decoder's `transposed_kernel`, also the
        `first` residual unit's conv1 buffer, which the conv's epilogue filled with SnakeBeta(samples + bias) (else
        None)."""
        from omni.kernels.vocoder_conv import vocoder_conv_transposed

        if self.decoder.transposed_kernel and up in self.transposed_matrices:
            # a 2-tap conv with a column per (phase, channel); its epilogue fills the first unit's conv1 buffer, which
            # _buffer allocates from the samples' shape alone (hence an expanded scalar, no memory)
            conv1 = first.conv1
            samples = (full.shape[0], conv1.conv.in_channels, (full.shape[-1] - 1) * up.stride)
            following, tail = self._buffer(conv1, batch, full.new_empty(()).expand(samples))
            snake = (first.act1.alpha, first.act1.beta)
            w = self.transposed_matrices[up]
            x = vocoder_conv_transposed(
                full, w, up.stride, snake=snake, bias=up.conv.bias, snake_out=tail, fast_sin=self.fast_sine
            )
            self._keep(conv1, batch, following)
            return x, following
        y = F.conv_transpose2d(full.unsqueeze(2), self.weights[up.conv], None, stride=(1, up.stride))
        # As CausalConvTranspose1d: drop the carried sample's own block and the trimmed tail.
        length = full.shape[-1] - batch.context(up.state_index)
        return self._channels_last(y)[..., up.stride : up.stride * (length + 1)], None

    def _snake_into(
        self, conv: nn.Module, snake: nn.Module, x: torch.Tensor, bias: torch.Tensor | None, batch: _Batch
    ) -> torch.Tensor:
        """SnakeBeta(x + bias) into `conv`'s [history ‖ new] input buffer, its new history kept; returns the buffer."""
        from omni.kernels.channels_last import snakebeta_cl

        full, tail = self._buffer(conv, batch, x)
        snakebeta_cl(x, snake.alpha, snake.beta, out=tail, bias=bias, fast_sin=self.fast_sine)
        self._keep(conv, batch, full)
        return full

    def _residual_unit(
        self,
        unit: ResidualUnit,
        x: torch.Tensor,
        x_bias: torch.Tensor | None,
        batch: _Batch,
        snaked: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """ResidualUnit.forward on x + x_bias (x_bias: its conv's bias, not yet added; None if it was), conv1's input
        buffer given as `snaked` when the previous residual add wrote it. Returns the unit's output and, with the
        decoder's `residual_snake_kernel`, the next conv's input buffer holding the next SnakeBeta of that output.
        With the decoder's `unit_tail_kernel`, everything after conv1 is one kernel (kernels/unit_tail.py); else
        with its `conv1_kernel`, a dilated conv1 and the SnakeBeta after it are, and with its `conv2_kernel` conv2
        and the add (kernels/vocoder_conv.py)."""
        from omni.kernels.channels_last import bias_residual_cl, snakebeta_cl
        from omni.kernels.unit_tail import unit_tail
        from omni.kernels.vocoder_conv import vocoder_conv, vocoder_conv_residual

        conv1, conv2 = unit.conv1, unit.conv2
        full = snaked if snaked is not None else self._snake_into(conv1, unit.act1, x, x_bias, batch)
        act = (unit.act2.alpha, unit.act2.beta)
        conv1_snaked = self.decoder.conv1_kernel and not self.decoder.unit_tail_kernel and unit in self.conv1_matrices
        if conv1_snaked:  # SnakeBeta(conv1 + its bias), as the cuDNN conv and snakebeta_cl below
            dilation = conv1.conv.dilation[0]
            h = vocoder_conv(
                full, self.conv1_matrices[unit], dilation, conv1.conv.bias, snake=act, fast_sin=self.fast_sine
            )
        else:
            h = self._conv(conv1, full)  # conv1's bias pending: added before the second SnakeBeta
        bias = conv2.conv.bias if x_bias is None else self.first_unit_bias[unit]
        fused, following = {"fast_sin": self.fast_sine}, None
        if self.decoder.residual_snake_kernel:
            conv, snake = self.next_snake[unit]
            following, tail = self._buffer(conv, batch, x)
            fused |= {"snake": (snake.alpha, snake.beta), "snake_out": tail}
        if self.decoder.unit_tail_kernel:
            out = unit_tail(h, conv1.conv.bias, act, self.conv2_matrices[unit], x, bias, **fused)
        else:
            if not conv1_snaked:
                h = snakebeta_cl(h, *act, bias=conv1.conv.bias, fast_sin=self.fast_sine)
            if self.decoder.conv2_kernel and unit in self.conv2_gemm:
                # conv2, its bias, the residual add and the next SnakeBeta: one GEMM's epilogue
                out = vocoder_conv_residual(h, self.conv2_matrices[unit], x, bias, **fused)
            else:
                out = bias_residual_cl(x, self._conv(conv2, h), bias, **fused)
        if following is not None:
            self._keep(self.next_snake[unit][0], batch, following)
        return out, following

    def _conv(self, conv: CausalConv1d, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        y = F.conv2d(x.unsqueeze(2), self.weights[conv.conv], bias, dilation=(1, conv.conv.dilation[0]))
        return self._channels_last(y)

    @staticmethod
    def _channels_last(y: torch.Tensor) -> torch.Tensor:
        """[B, C, 1, T] conv output -> [B, C, T] view; fails loudly if the conv did not keep channels-last memory."""
        if not y.is_contiguous(memory_format=torch.channels_last):
            raise RuntimeError(f"channels-last vocoder: a conv returned strides {y.stride()} for shape {list(y.shape)}")
        return y.squeeze(2)

    @staticmethod
    def _buffer(conv: nn.Module, batch: _Batch, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A channels-last [history ‖ new] input buffer for `conv` with the history filled in, and its `new` part."""
        from omni.kernels.channels_last import channels_last_empty

        return batch.buffer(conv.state_index, x, channels_last_empty)

    def _copy_into(self, conv: nn.Module, batch: _Batch, x: torch.Tensor) -> torch.Tensor:
        """`conv`'s filled [history ‖ new] buffer with x [B, C, T] (any layout) copied in as its new part, and its new
        history kept."""
        full, tail = self._buffer(conv, batch, x)
        tail.copy_(x)
        self._keep(conv, batch, full)
        return full

    @staticmethod
    def _keep(conv: nn.Module, batch: _Batch, full: torch.Tensor) -> None:
        """`conv`'s new history out of its filled buffer (_Batch.keep)."""
        batch.keep(conv.state_index, full, conv.per_frame)


def _channels_last_weight(conv: nn.Conv1d | nn.ConvTranspose1d) -> torch.Tensor:
    """A Conv1d's weight as a conv2d's over [B, C, 1, T] in channels-last memory: [out, in, 1, k] (transposed:
    [in, out, 1, k]); a copy, made once."""
    return conv.weight.detach().unsqueeze(2).contiguous(memory_format=torch.channels_last)


def fuse_channels_last(decoder: CodecDecoder, fast_sine: bool = False) -> int:
    """Run `decoder`'s vocoder through a ChannelsLastVocoder in decode_streams (and prime, decode), codec_step and
    CodecGraphs (CUDA, or CPU under TRITON_INTERPRET=1); returns how many convs it converted. Call after moving the
    decoder to its device and dtype."""
    vocoder = ChannelsLastVocoder(decoder, fast_sine)
    decoder.channels_last_vocoder = vocoder
    decoder._back = vocoder.back
    return len(vocoder.weights)


def plan_replays(
    lengths: Sequence[int], costs: dict[tuple[int, int], float]
) -> list[tuple[int, int, list[int]]] | None:
    """Replays that decode rows of these chunk lengths at the least summed cost: [(bucket, chunk length, row
    indices)], every row in exactly one; None when a chunk is longer than every captured length (the step runs
    eagerly). `costs[(bucket, chunk length)]` is each captured graph's replay time.

    With the rows sorted longest first, some cheapest plan gives each replay a run of them: swapping two rows
    between replays so that the longer goes to the replay of the longer chunk never costs more. So a dynamic
    program over that order finds it: from row i on, a replay of bucket b takes rows i..i+b-1 (spare rows are
    free; fewer only at the end), at the cheapest captured length that holds row i, the longest of them.
    """
    if not lengths or max(lengths) > max(t for _, t in costs):
        return None
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    graphs = _cheapest_graphs(tuple(sorted(costs.items())), tuple(sorted(set(lengths))))
    n = len(order)
    best = [0.0] * (n + 1)  # best[i]: the least cost of rows order[i:]
    pick: list[tuple[int, int]] = [(0, 0)] * n
    for i in range(n - 1, -1, -1):
        best[i] = math.inf
        for bucket, chunk, cost in graphs[lengths[order[i]]]:
            total = cost + best[min(i + bucket, n)]
            if total < best[i]:
                best[i], pick[i] = total, (bucket, chunk)
    plan, i = [], 0
    while i < n:
        bucket, chunk = pick[i]
        plan.append((bucket, chunk, order[i : i + bucket]))
        i += bucket
    return plan


@functools.lru_cache(maxsize=256)
def _cheapest_graphs(
    costs: tuple[tuple[tuple[int, int], float], ...], lengths: tuple[int, ...]
) -> dict[int, list[tuple[int, int, float]]]:
    """For each row length: per bucket, the cheapest captured graph whose chunk holds it, (bucket, chunk, cost)."""
    out = {}
    for n in lengths:
        cheapest: dict[int, tuple[float, int]] = {}
        for (bucket, chunk), cost in costs:
            if chunk >= n and (bucket not in cheapest or cost < cheapest[bucket][0]):
                cheapest[bucket] = (cost, chunk)
        out[n] = [(bucket, chunk, cost) for bucket, (cost, chunk) in sorted(cheapest.items())]
    return out


class CodecGraphs:
    """Captured codec steps over `state`; its last slot is scratch for padding rows (use slots 0..num_slots-2).

    `capture=False` (CPU tests) keeps every static buffer, scratch row and replay plan but runs `codec_step` eagerly
    where a graph would replay.

    `channels_last=True` runs the vocoder channels-last (`fuse_channels_last`, applied to `decoder` in place, so the
    eager fallback for a batch no graph holds runs it too).
    """

    def __init__(
        self,
        decoder: CodecDecoder,
        state: CodecState,
        buckets: Sequence[int] = (16, 64, 256),
        chunk_lengths: Sequence[int] = (1, 15),
        channels_last: bool = False,
        capture: bool = True,
    ):
        if capture and state.key.device.type != "cuda":
            raise ValueError("CodecGraphs needs the decoder and its state on a CUDA device")
        if max(buckets) > state.num_slots - 1:
            raise ValueError(f"CodecGraphs: bucket {max(buckets)} needs a state of at least {max(buckets) + 1} slots")
        if channels_last and getattr(decoder, "channels_last_vocoder", None) is None:
            fuse_channels_last(decoder)
        self.decoder = decoder
        self.state = state
        self.scratch = state.num_slots - 1
        self.buckets = sorted(buckets)
        self.chunk_lengths = sorted(chunk_lengths)
        self.planned_ms = 0.0  # the last decode's plan, by the replay times below
        self.planned_frames = 0  # and the frames its replays compute, padding rows and frames included
        self.planner = plan_replays  # a benchmark swaps in another planner to compare
        self.graphs: dict[tuple[int, int], tuple[torch.cuda.CUDAGraph | None, dict[str, torch.Tensor]]] = {}
        pool = torch.cuda.graph_pool_handle() if capture else None
        # Largest first, so the smaller graphs fit in the memory the first one reserved in the shared pool.
        for b in reversed(self.buckets):
            for t in reversed(self.chunk_lengths):
                self.graphs[b, t] = self._capture(b, t, pool)
        # What plan_replays weighs: measured replay times; without capture, a launch plus the padded frames.
        if capture:
            self.replay_ms = {key: self._time_replay(key) for key in self.graphs}
        else:
            self.replay_ms = {(b, t): 1.0 + b * t / 16 for b, t in self.graphs}

    @torch.no_grad()
    def _capture(self, bucket: int, chunk: int, pool) -> tuple[torch.cuda.CUDAGraph | None, dict[str, torch.Tensor]]:
        """The graph of one (bucket, chunk length) and its static inputs and output; with no pool (capture=False,
        the CPU tests' mode) no graph: each replay runs `codec_step` eagerly on the same static buffers."""
        device = self.state.key.device
        io = {
            "codes": torch.zeros(bucket, chunk, 16, dtype=torch.long, device=device),
            "rows": torch.full((bucket,), self.scratch, dtype=torch.long, device=device),
            "frames": torch.zeros(bucket, dtype=torch.long, device=device),
        }
        if pool is None:
            return None, io
        # Warm up on a side stream (library handles, autotuning), scratch rows only: real slots are not touched.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                codec_step(self.decoder, self.state, io["codes"], io["rows"], io["frames"])
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            io["wav"] = codec_step(self.decoder, self.state, io["codes"], io["rows"], io["frames"])
        return graph, io

    def _time_replay(self, key: tuple[int, int], replays: int = 3) -> float:
        """Mean ms of a replay of graph `key` (its rows are all scratch right after capture: no slot changes)."""
        graph = self.graphs[key][0]
        graph.replay()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / replays

    def fits(self, frames: int) -> bool:
        """Whether chunks of up to `frames` frames replay graphs (longer ones run eagerly)."""
        return frames <= self.chunk_lengths[-1]

    @torch.no_grad()
    def decode_streams(self, slots: list[int], chunks: list[torch.Tensor]) -> list[torch.Tensor]:
        """As `CodecDecoder.decode_streams(state, slots, chunks)`, through the replays `plan_replays` picks (eager
        when a chunk is longer than every captured length)."""
        step = self.decode_step(slots, chunks)
        return [step.wave(i) for i in range(len(slots))]

    @torch.no_grad()
    def decode_step(self, slots: list[int], chunks: Sequence[np.ndarray | torch.Tensor]) -> "StepWaves":
        """`decode_streams` with the audio left whole per replay (`StepWaves`): no torch call per row. Chunks are
        [t, 16] integer codes, numpy arrays (the service's) or CPU tensors."""
        if len(set(slots)) != len(slots):
            raise ValueError(f"CodecGraphs: a slot appears twice in {slots}")
        for s in slots:
            if not 0 <= s < self.scratch:
                raise ValueError(
                    f"CodecGraphs: slot {s} outside 0..{self.scratch - 1} (slot {self.scratch} is scratch)"
                )
        for c in chunks:
            if not _integer_codes(c):
                raise ValueError(f"codec codes must be integers, got {getattr(c, 'dtype', type(c))}")
            if c.ndim != 2 or c.shape[-1] != NUM_CODEBOOKS:
                raise ValueError(f"codec codes must have shape [T, 16], got {list(c.shape)}")
        lengths = [c.shape[0] for c in chunks]
        plan = self.planner(lengths, self.replay_ms) if slots and len(slots) == len(chunks) else None
        if plan is None or max(lengths) == 0:
            self.planned_ms, self.planned_frames = 0.0, 0
            return decode_eager(self.decoder, self.state, slots, chunks)
        self.planned_ms = sum(self.replay_ms[b, t] for b, t, _ in plan)  # what the plan costs by capture timings
        self.planned_frames = sum(b * t for b, t, _ in plan)
        where: list[tuple[int, int, int]] = [(0, 0, 0)] * len(slots)
        blocks = []
        spf = self.decoder.samples_per_frame
        for bucket, chunk, rows in plan:
            blocks.append(self._replay((bucket, chunk), [slots[i] for i in rows], [chunks[i] for i in rows]))
            for j, i in enumerate(rows):
                where[i] = (len(blocks) - 1, j, lengths[i] * spf)
        return StepWaves(blocks, where)

    def _replay(
        self, key: tuple[int, int], slots: list[int], chunks: Sequence[np.ndarray | torch.Tensor]
    ) -> torch.Tensor:
        """One replay of graph `key` over these rows (fewer than its bucket: the rest are scratch); their waves."""
        graph, io = self.graphs[key]
        codes, rows, frames = self._stage(key, slots, chunks)
        io["codes"].copy_(codes)
        io["rows"].copy_(rows)
        io["frames"].copy_(frames)
        if graph is None:
            io["wav"] = codec_step(self.decoder, self.state, io["codes"], io["rows"], io["frames"])
        else:
            graph.replay()
        return io["wav"][: len(slots)].clone()  # the static output is overwritten by the next replay of this graph

    def _stage(
        self, key: tuple[int, int], slots: list[int], chunks: Sequence[np.ndarray | torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A replay's inputs (codes zero-padded to the graph's shape, rows with scratch padding, frames) built on
        the host and sent in one non-blocking copy: a blocking copy per chunk waits for the previous replay each time.
        """
        bucket, length = key
        n, split = len(slots), bucket * length * NUM_CODEBOOKS
        host = np.zeros(split + 2 * bucket, dtype=np.int64)
        codes = host[:split].reshape(bucket, length, NUM_CODEBOOKS)
        rows, frames = host[split:].reshape(2, bucket)
        for j, c in enumerate(chunks):
            codes[j, : c.shape[0]] = c  # numpy reads a CPU tensor through its buffer: no torch call
        self.decoder._check_codes(torch.from_numpy(codes), dims=3)  # on the host: no sync
        rows[:n], rows[n:] = slots, self.scratch
        frames[:n] = [c.shape[0] for c in chunks]
        device = to_device(torch.from_numpy(host), self.state.key.device)
        codes_d, rows_d, frames_d = device.split([split, bucket, bucket])
        return codes_d.view(bucket, length, NUM_CODEBOOKS), rows_d, frames_d


def _integer_codes(codes) -> bool:
    """int64 or int32 codes, as `CodecDecoder` takes them (its eager path gets the same chunks)."""
    if isinstance(codes, torch.Tensor):
        return codes.dtype in (torch.int64, torch.int32)
    return isinstance(codes, np.ndarray) and codes.dtype in (np.int64, np.int32)


@dataclass
class StepWaves:
    """A decode step's audio as the device left it: the replays' whole outputs, and where each input row's wave lies
    in them. Slicing a wave per row is a torch call per row, and each torch call hands the GIL to the event loop's
    thread and waits to get it back; the codec engine instead packs the blocks whole and slices bytes on the host."""

    blocks: list[torch.Tensor]  # [rows, samples] each: one per replay (one per row from an eager decode)
    where: list[tuple[int, int, int]]  # per input row: (block, row in the block, samples)

    @classmethod
    def of_rows(cls, waves: Sequence[torch.Tensor]) -> "StepWaves":
        """An eager decode's per-row waves, one block each."""
        return cls([w.reshape(1, -1) for w in waves], [(i, 0, w.shape[-1]) for i, w in enumerate(waves)])

    def wave(self, i: int) -> torch.Tensor:
        """Row i's wave (a view)."""
        block, row, samples = self.where[i]
        return self.blocks[block][row, :samples]


def decode_eager(
    decoder: CodecDecoder, state: CodecState, slots: list[int], chunks: Sequence[np.ndarray | torch.Tensor]
) -> StepWaves:
    """`decoder.decode_streams` over numpy or tensor codes, as `StepWaves` (a block per row)."""
    return StepWaves.of_rows(decoder.decode_streams(state, slots, [torch.as_tensor(c) for c in chunks]))
