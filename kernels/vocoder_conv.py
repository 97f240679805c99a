"""A vocoder conv (stride 1, any dilation, no groups) as one Triton implicit GEMM over channels-last rows.

In `codec_graphs.ChannelsLastVocoder` each residual unit's k=7 conv1 runs as a cuDNN conv2d over [B, C, 1, T] in
channels-last memory. On an H100 the codec's convs are 62.7% of its 128x15 replay at ~43% of the dense bf16 peak (run
227); cuDNN runs the dilation-1 conv1s at up to 776 TFLOP/s but the dilation-3 and -9 ones at 280-490 (run 233). This
kernel is the same conv as a GEMM whose A operand is never materialised, at the same speed whatever the dilation (the
decoder's `conv1_kernel` runs the dilated conv1s through it, with their SnakeBeta in the epilogue):

    y[b, t, :] = sum over taps j and input channels c of x[b, t + j*dilation, c] * w[:, c, j]

The input is the conv's [history ‖ new] buffer, a [B, T_in, C] block of memory, seen as a [B*T_in, C] matrix; the
weight is [taps*C_in, C_out] (`conv_matrix`, made once). One program owns a [BLOCK_M, BLOCK_N] tile of one row's
output: for each (tap, channel block) it loads the A tile starting at row b*T_in + t0 + j*dilation, so each K step
is a plain 2D tile and the loop is one flat loop that Triton pipelines. BLOCK_K must divide C_in, so a K step never
straddles two taps. A rows past T_out belong to the next batch row or past the end (tensor descriptors fill those
with zeros); their outputs are never stored. Where it takes at least 3% fewer tiles (`flat_tiles`: short chunks), M
tiles run over the [B*T_in] rows across batch rows instead, each output's K loop unchanged (the same bits).

The same kernel serves the vocoder's other convs (each a decoder switch: conv2_kernel on since run 235,
transposed_kernel off):
- `vocoder_conv_residual` (`conv2_kernel`): a residual unit's 1x1 conv2 whose epilogue also adds the residual and
  the bias and writes the next SnakeBeta, as bias_residual_cl would from cuDNN's output;
- `vocoder_conv_transposed` with `transposed_matrix` (`transposed_kernel`): a block's transposed conv (kernel 2r,
  stride r) as a 2-tap conv with r*C_out columns, one per (phase, channel), whose epilogue also writes the first
  residual unit's SnakeBeta of its output (plus the conv's bias) into that unit's conv1 buffer.

Not bitwise against cuDNN (another summation order): `tools/bench_vocoder_convs.py` (conv1s; --transposed) and
`tools/bench_unit_tail.py --conv2` time it by tiles against cuDNN and report the difference.
"""

import torch
import triton
import triton.language as tl
from omni.kernels import INTERPRETED
from omni.kernels.channels_last import _snake, check_snake_out, is_channels_last
from omni.kernels.tiles import Tiles
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _vocoder_conv_kernel(
    x_desc,
    w_desc,
    y_ptr,
    bias_ptr,
    alpha_ptr,
    beta_ptr,
    res_ptr,
    snake_ptr,
    batch,
    length_in,
    length_out,
    out_channels,
    y_stride_b,
    y_stride_t,
    res_stride_b,
    res_stride_t,
    snake_stride_b,
    snake_stride_t,
    dilation,
    IN_CHANNELS: tl.constexpr,
    TAPS: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    SNAKE: tl.constexpr,
    RESIDUAL: tl.constexpr,
    PHASES: tl.constexpr,
    FAST_SIN: tl.constexpr,
    IEEE: tl.constexpr,
    FLAT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    n0 = tl.program_id(1) * BLOCK_N
    if FLAT:  # M tiles over the [B*T_in] buffer rows: a tile spans batch rows; outputs past a row's T_out not stored
        row0 = tl.program_id(0) * BLOCK_M
        m = (row0 + tl.arange(0, BLOCK_M)).to(tl.int64)
        row = m // length_in  # each output's batch row (int64: large batches overflow int32 offsets)
        t = m % length_in
        in_t = (t < length_out) & (row < batch)
    else:  # M tiles within one batch row
        tiles_t = tl.cdiv(length_out, BLOCK_M)
        b = tl.program_id(0) // tiles_t
        t0 = (tl.program_id(0) % tiles_t) * BLOCK_M
        row0 = b * length_in + t0
        row = b.to(tl.int64)
        t = (t0 + tl.arange(0, BLOCK_M)).to(tl.int64)
        in_t = t < length_out
    steps_per_tap: tl.constexpr = IN_CHANNELS // BLOCK_K
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(TAPS * steps_per_tap):
        tap = step // steps_per_tap
        c0 = (step % steps_per_tap) * BLOCK_K
        a = x_desc.load([row0 + tap * dilation, c0])
        w = w_desc.load([tap * IN_CHANNELS + c0, n0])
        if IEEE:  # fp32 sums of the exact products without TF32: the fp32 decoder, and 16-bit under the interpreter
            acc = tl.dot(a.to(tl.float32), w.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, w, acc)
    n = n0 + tl.arange(0, BLOCK_N)
    in_n = n < out_channels
    inside = in_t[:, None] & in_n[None, :]
    if SNAKE or RESIDUAL:  # the conv's output rounded as cuDNN stores it, then the separate kernel's sums: its bits
        acc = acc.to(y_ptr.dtype.element_ty).to(tl.float32)
    if RESIDUAL:  # bias_residual_cl's x + y + bias, in its order
        res = tl.load(res_ptr + (row * res_stride_b + t * res_stride_t)[:, None] + n[None, :], mask=inside)
        acc = res.to(tl.float32) + acc
    if HAS_BIAS and PHASES == 1:
        acc += tl.load(bias_ptr + n, mask=in_n, other=0.0).to(tl.float32)[None, :]
    if SNAKE and not RESIDUAL and PHASES == 1:  # conv1's: snakebeta_cl's SnakeBeta of conv + bias is the output
        acc = _snake(acc, alpha_ptr, beta_ptr, n, in_n, FAST_SIN)
    out = acc.to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + (row * y_stride_b + t * y_stride_t)[:, None] + n[None, :], out, mask=inside)
    if SNAKE and (RESIDUAL or PHASES > 1):  # the next SnakeBeta, of the rounded output, into the next conv's buffer
        # A transposed conv's column n is (phase n // C, channel n % C): its bias and SnakeBeta are the channel's, and
        # its sample t*PHASES + n // C lies at t*snake_stride_t + n when the caller passes PHASES times the buffer's
        # time stride of C (dense rows). The bias is the next SnakeBeta's here (snakebeta_cl's), not the output's.
        c = n
        if PHASES > 1:
            c = n % (out_channels // PHASES)
        s = out.to(tl.float32)
        if HAS_BIAS and PHASES > 1:
            s += tl.load(bias_ptr + c, mask=in_n, other=0.0).to(tl.float32)[None, :]
        snake = _snake(s, alpha_ptr, beta_ptr, c, in_n, FAST_SIN)
        to = snake_ptr + (row * snake_stride_b + t * snake_stride_t)[:, None] + n[None, :]
        tl.store(to, snake.to(snake_ptr.dtype.element_ty), mask=inside)


# Tiles by (conv, input channels): each width's fastest of five tile sizes, timed on an H100 at 128 rows. conv1 (the
# dilated conv1s with their SnakeBeta): run 233, 15 and 4 frames, the same one at both. conv2 (vocoder_conv_residual's
# 1x1 with the add and the next SnakeBeta, tools/bench_unit_tail.py --conv2) and transposed (the upsamplers with the
# first SnakeBeta, tools/bench_vocoder_convs.py --transposed, keyed by their input width): run 234, 15 frames, tiles
# within batch rows. A conv not here gets `tiles_for`'s rule.
VOCODER_TILES: dict[tuple[str, int], Tiles] = {
    ("conv1", 768): Tiles(128, 256, 64, 8, 3),
    ("conv1", 384): Tiles(128, 128, 64, 8, 3),
    ("conv1", 192): Tiles(128, 256, 64, 8, 3),
    ("conv1", 96): Tiles(128, 128, 32, 4, 4),
    ("conv2", 768): Tiles(128, 256, 64, 8, 3),
    ("conv2", 384): Tiles(128, 128, 64, 8, 3),
    ("conv2", 192): Tiles(128, 256, 64, 8, 3),
    ("conv2", 96): Tiles(128, 128, 32, 4, 4),
    ("transposed", 1536): Tiles(64, 128, 64, 4, 4),
    ("transposed", 768): Tiles(128, 256, 64, 8, 3),
    ("transposed", 384): Tiles(128, 256, 64, 8, 3),
    ("transposed", 192): Tiles(128, 128, 32, 4, 4),
}
CONVS = ("conv1", "conv2", "transposed")


def tiles_for(in_channels: int, conv: str = "conv1") -> Tiles:
    """The tiles vocoder_conv runs `conv` (one of CONVS) of `in_channels` with: VOCODER_TILES', else 128x128 output
    tiles with the largest BLOCK_K up to 64 that divides the channels (a K step never straddles two taps)."""
    if conv not in CONVS:
        raise ValueError(f"tiles_for: conv {conv!r} is not one of {CONVS}")
    if (conv, in_channels) in VOCODER_TILES:
        return VOCODER_TILES[conv, in_channels]
    block_k = 64
    while in_channels % block_k:
        block_k //= 2
    return Tiles(128, 128, block_k, 4, 4)


def fits(in_channels: int, out_channels: int) -> bool:
    """Whether the kernel can run a conv of these widths in any 16-bit or wider dtype: its tensor descriptors need rows
    of multiples of 16 bytes (8 channels of bf16). The decoder leaves convs that do not fit to cuDNN."""
    return in_channels % 8 == 0 and out_channels % 8 == 0


# Flat tiles only where they are at most this share of the row tiles. At 128 rows of 15 frames the two dilation-3
# conv1s take 498 / 512 and 2,418 / 2,432 tiles flat, and within rows ran 10.7% and 9.4% faster with their SnakeBeta
# (run 244, an H100): a tile that crosses a batch row costs more than the few tiles it saves.
FLAT_TILE_SHARE = 0.97


def flat_tiles(batch: int, length_in: int, length_out: int, block_m: int) -> bool:
    """Whether the kernel tiles M over the [B*T_in] buffer rows (a tile spans batch rows; the T_in - T_out rows at a
    row's end are computed, not stored) rather than within each batch row: where that takes at least 3% fewer tiles.
    Short chunks: an upsampler's T_out of 4 new samples a row fills 4 of a 128-row tile within a row (run 234: the
    transposed convs 24% slower at 128x1), 125 of 128 flat."""
    flat, rows = triton.cdiv(batch * length_in, block_m), batch * triton.cdiv(length_out, block_m)
    return flat <= FLAT_TILE_SHARE * rows


def conv_matrix(weight: torch.Tensor) -> torch.Tensor:
    """A Conv1d weight [C_out, C_in, taps] as the kernel's [taps*C_in, C_out] matrix (a copy, made once)."""
    out_channels, in_channels, taps = weight.shape
    return weight.permute(2, 1, 0).reshape(taps * in_channels, out_channels).contiguous()


def transposed_matrix(weight: torch.Tensor, stride: int) -> torch.Tensor:
    """A ConvTranspose1d weight [C_in, C_out, 2*stride] (the vocoder's upsamplers: kernel twice the stride, one input
    sample carried) as a 2-tap stride-1 conv's [2*C_in, stride*C_out] matrix (a copy, made once).

    With the carried sample prepended, new input sample i's `stride` outputs are
        y[i*stride + p] = x_full[i] @ W[:, :, p + stride] + x_full[i + 1] @ W[:, :, p]      (p < stride)
    so in channels-last memory the output [B, T*stride, C_out] is the [B, T, stride*C_out] output of a 2-tap conv
    over [history ‖ new] with N = stride*C_out (column p*C_out + c is phase p, channel c): vocoder_conv runs it, and
    `phases_to_samples` views its output as samples."""
    in_channels, out_channels, taps = weight.shape
    if taps != 2 * stride:
        raise ValueError(f"transposed_matrix: kernel {taps} is not twice the stride {stride}")

    def phases(w: torch.Tensor) -> torch.Tensor:  # [C_in, C_out, stride] -> [C_in, stride*C_out]
        return w.permute(0, 2, 1).reshape(in_channels, stride * out_channels)

    return torch.cat([phases(weight[:, :, stride:]), phases(weight[:, :, :stride])]).contiguous()


def phases_to_samples(y: torch.Tensor, stride: int) -> torch.Tensor:
    """vocoder_conv's output with transposed_matrix, [B, stride*C_out, T] channels-last, as the [B, C_out, T*stride]
    channels-last samples it holds (a view)."""
    batch, columns, length = y.shape
    return y.transpose(1, 2).reshape(batch, length * stride, columns // stride).transpose(1, 2)


def vocoder_conv(
    x: torch.Tensor,
    w: torch.Tensor,
    dilation: int = 1,
    bias: torch.Tensor | None = None,
    tiles: Tiles | None = None,
    snake: tuple[torch.Tensor, torch.Tensor] | None = None,
    fast_sin: bool = False,
    flat: bool | None = None,
) -> torch.Tensor:
    """The stride-1 conv of x [B, C_in, T_in] (channels-last memory: strides (T_in*C_in, 1, C_in)) with the weight
    matrix w [taps*C_in, C_out] (`conv_matrix`); returns [B, C_out, T_out] in channels-last memory,
    T_out = T_in - (taps-1)*dilation; `tiles` default to tiles_for(C_in). fp32 inputs are summed without TF32 (as
    the fp32 decoder's cuDNN convs), in at most two stages (fp32 tiles take twice the shared memory).
    With `snake` (alpha, beta [C_out] log-parameters) the output is SnakeBeta(conv + bias) as
    snakebeta_cl(conv(x), alpha, beta, bias=bias) computes it from a cuDNN output: a residual unit's conv1 and the
    SnakeBeta after it in one pass (`fast_sin` as snakebeta_cl's).
    `flat`: M tiles across batch rows (True) or within each row (False), the same bits; None: `flat_tiles`' choice
    (what the decoder runs; tools/bench_vocoder_convs.py --both-tilings times the two)."""
    return _run(x, w, dilation, bias, tiles, snake, None, None, fast_sin, flat=flat)


def vocoder_conv_residual(
    h: torch.Tensor,
    w: torch.Tensor,
    x: torch.Tensor,
    bias: torch.Tensor,
    tiles: Tiles | None = None,
    snake: tuple[torch.Tensor, torch.Tensor] | None = None,
    snake_out: torch.Tensor | None = None,
    fast_sin: bool = False,
) -> torch.Tensor:
    """A residual unit's close in one pass: x + conv(h) + bias, as bias_residual_cl(x, conv(h), bias, snake=snake,
    snake_out=snake_out) computes it from a cuDNN output (the conv's output rounded first, then the fp32 sum in that
    kernel's order). h as vocoder_conv's x (conv2's input: dense channels-last), w its `conv_matrix` (1x1 for
    conv2); x [B, C_out, T_out] channels-last with free batch and time strides; returns a dense channels-last tensor.
    `tiles` default to tiles_for(C_in, "conv2").
    With `snake` (alpha, beta) the SnakeBeta of that output also goes into `snake_out` (the next conv's buffer)."""
    out_shape = (h.shape[0], w.shape[1], h.shape[2] - (w.shape[0] // h.shape[1] - 1))
    if tuple(x.shape) != out_shape or not is_channels_last(x) or x.dtype != h.dtype:
        raise ValueError(f"vocoder_conv_residual: x must be a channels-last {list(out_shape)} {h.dtype} tensor")
    if bias.shape != (w.shape[1],):
        raise ValueError(f"vocoder_conv_residual: bias must be [{w.shape[1]}], got {list(bias.shape)}")
    if (snake is None) != (snake_out is None):
        raise ValueError("vocoder_conv_residual: snake and snake_out go together")
    if snake_out is not None:
        check_snake_out("vocoder_conv_residual", snake_out, x)
    return _run(h, w, 1, bias, tiles or tiles_for(h.shape[1], "conv2"), snake, x, snake_out, fast_sin)


def vocoder_conv_transposed(
    full: torch.Tensor,
    w: torch.Tensor,
    stride: int,
    tiles: Tiles | None = None,
    snake: tuple[torch.Tensor, torch.Tensor] | None = None,
    bias: torch.Tensor | None = None,
    snake_out: torch.Tensor | None = None,
    fast_sin: bool = False,
) -> torch.Tensor:
    """A vocoder block's transposed conv over its [history ‖ new] buffer `full` [B, C_in, 1 + T] (one carried
    sample), w its `transposed_matrix`: the [B, C_out, T*stride] new samples, channels-last, without the conv's bias
    (`phases_to_samples`' view of the GEMM's output). `tiles` default to tiles_for(C_in, "transposed").
    With `snake` (alpha, beta) the SnakeBeta of those samples + `bias` also goes into `snake_out` (the first residual
    unit's conv1 buffer's new part: dense [T, C_out] rows), as snakebeta_cl(samples, alpha, beta, out=snake_out,
    bias=bias) computes it: the block's first SnakeBeta without a pass of its own."""
    batch, _, length = full.shape
    if w.shape[1] % stride:
        raise ValueError(f"vocoder_conv_transposed: {w.shape[1]} columns are not {stride} phases of whole channels")
    channels = w.shape[1] // stride
    if (snake is None) != (snake_out is None) or (bias is not None and snake is None):
        raise ValueError("vocoder_conv_transposed: snake and snake_out go together, and bias only with them")
    if snake_out is not None:
        check_snake_out(
            "vocoder_conv_transposed", snake_out, full.new_empty(()).expand(batch, channels, (length - 1) * stride)
        )
        if snake_out.stride(2) != channels:
            raise ValueError(f"vocoder_conv_transposed: snake_out's rows must be dense ({channels} channels apart)")
    if bias is not None and bias.shape != (channels,):
        raise ValueError(f"vocoder_conv_transposed: bias must be [{channels}], got {list(bias.shape)}")
    tiles = tiles or tiles_for(full.shape[1], "transposed")
    y = _run(full, w, 1, bias, tiles, snake, None, snake_out, fast_sin, phases=stride)
    return phases_to_samples(y, stride)


def _run(
    x: torch.Tensor,
    w: torch.Tensor,
    dilation: int,
    bias: torch.Tensor | None,
    tiles: Tiles | None,
    snake: tuple[torch.Tensor, torch.Tensor] | None,
    residual: torch.Tensor | None,
    snake_out: torch.Tensor | None,
    fast_sin: bool,
    phases: int = 1,
    flat: bool | None = None,
) -> torch.Tensor:
    """vocoder_conv, or with `residual` vocoder_conv_residual, or with `phases` vocoder_conv_transposed (their
    arguments checked by the callers); `flat` as vocoder_conv's."""
    batch, in_channels, length_in = x.shape
    taps = w.shape[0] // in_channels
    tiles = tiles or tiles_for(in_channels)
    out_channels = w.shape[1]
    length_out = length_in - (taps - 1) * dilation
    if x.stride() != (length_in * in_channels, 1, in_channels):
        raise ValueError(f"vocoder_conv: x {list(x.shape)} must be a dense [B, T, C] block, got strides {x.stride()}")
    if w.shape[0] != taps * in_channels or not w.is_contiguous():
        raise ValueError(f"vocoder_conv: w {list(w.shape)} is not a contiguous [taps*{in_channels}, C_out] matrix")
    if (in_channels * x.element_size()) % 16 or (out_channels * x.element_size()) % 16:
        raise ValueError(f"vocoder_conv: {in_channels} -> {out_channels} channels: rows must be multiples of 16 bytes")
    if in_channels % tiles.block_k or length_out < 1:
        raise ValueError(f"vocoder_conv: BLOCK_K {tiles.block_k} must divide C_in {in_channels}; T_out {length_out}")
    y = torch.empty(batch, length_out, out_channels, dtype=x.dtype, device=x.device)
    rows = x.transpose(1, 2).reshape(batch * length_in, in_channels)  # a view: the dense [B, T_in, C] block
    x_desc = TensorDescriptor.from_tensor(rows, [tiles.block_m, tiles.block_k])
    w_desc = TensorDescriptor.from_tensor(w, [tiles.block_k, tiles.block_n])
    if flat is None:
        flat = flat_tiles(batch, length_in, length_out, tiles.block_m)
    tiles_m = triton.cdiv(batch * length_in, tiles.block_m) if flat else batch * triton.cdiv(length_out, tiles.block_m)
    grid = (tiles_m, triton.cdiv(out_channels, tiles.block_n))
    res = residual if residual is not None else y.transpose(1, 2)  # never read without RESIDUAL
    to = snake_out if snake_out is not None else res
    _vocoder_conv_kernel[grid](
        x_desc,
        w_desc,
        y,
        bias if bias is not None else y,
        *(snake if snake is not None else (y, y)),
        res,
        to,
        batch,
        length_in,
        length_out,
        out_channels,
        y.stride(0),
        y.stride(1),
        res.stride(0),
        res.stride(2),
        to.stride(0),
        to.stride(2) * phases,  # a transposed conv's output row holds `phases` samples of the buffer
        dilation,
        IN_CHANNELS=in_channels,
        TAPS=taps,
        HAS_BIAS=bias is not None,
        SNAKE=snake is not None,
        RESIDUAL=residual is not None,
        PHASES=phases,
        FAST_SIN=fast_sin and y.element_size() == 2 and not INTERPRETED,
        # the interpreter's dot of a descriptor-loaded bf16 tile is wrong (numpy has no bf16): fp32 there
        IEEE=x.dtype == torch.float32 or INTERPRETED,
        FLAT=flat,
        BLOCK_M=tiles.block_m,
        BLOCK_N=tiles.block_n,
        BLOCK_K=tiles.block_k,
        num_warps=tiles.num_warps,
        num_stages=tiles.num_stages if x.element_size() < 4 else min(tiles.num_stages, 2),
    )
    return y.transpose(1, 2)
