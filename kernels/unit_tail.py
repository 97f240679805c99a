"""A vocoder residual unit's tail as one Triton GEMM over channels-last rows.

In `codec_graphs.ChannelsLastVocoder` a residual unit ends with SnakeBeta(conv1 output + conv1 bias), the 1x1 conv2,
the residual add (+ conv2's bias) and, with `residual_snake_kernel`, the next SnakeBeta of the sum. Done apart, that
is four kernels and eight passes over [B, T, C] tensors at the memory bandwidth (run 99: SnakeBeta and the adds were
~27% of the 128x15 step's CUDA time). Here one program owns a [BLOCK_M, BLOCK_N] tile of the [B*T, C] output:

- the A tiles are conv1's output rows with SnakeBeta applied as they load, rounded to the activations' dtype as the
  separate SnakeBeta kernel stores them;
- B is conv2's weight as [C_in, C_out];
- the epilogue rounds the fp32 sum to the activations' dtype (as cuDNN's conv output), adds the residual x and the
  bias in fp32, rounds and stores the unit's output, and, given `snake`, also stores SnakeBeta of that output into
  the next conv's input buffer (kernels/channels_last.bias_residual_cl's epilogue).

Two reads (h, x) and two writes instead of eight passes. Not bitwise against cuDNN: the GEMM sums in its own order
(tests/test_unit_tail.py compares with the separate kernels in fp32 within 1e-5 and in bf16 within a rounding).
"""

import torch
import triton
import triton.language as tl
from omni.kernels import INTERPRETED
from omni.kernels.channels_last import _snake, channels_last_empty, check_snake_out, is_channels_last
from omni.kernels.tiles import Tiles


@triton.jit
def _unit_tail_kernel(
    h_ptr,
    w_ptr,
    x_ptr,
    out_ptr,
    h_bias_ptr,
    act_alpha_ptr,
    act_beta_ptr,
    bias_ptr,
    alpha_ptr,
    beta_ptr,
    snake_ptr,
    rows,
    length,
    channels,
    x_stride_b,
    x_stride_t,
    snake_stride_b,
    snake_stride_t,
    SNAKE: tl.constexpr,
    FAST_SIN: tl.constexpr,
    IEEE: tl.constexpr,
    PROLOGUE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    m = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)  # rows b*T + t of the [B*T, C] matrices
    n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    in_m, in_n = m < rows, n < channels
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, channels, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        in_k = k < channels
        h = tl.load(h_ptr + m[:, None] * channels + k[None, :], mask=in_m[:, None] & in_k[None, :], other=0.0)
        if PROLOGUE:
            h = h.to(tl.float32) + tl.load(h_bias_ptr + k, mask=in_k, other=0.0).to(tl.float32)[None, :]
            # SnakeBeta of conv1's output, rounded as the separate kernel would store it; padded K columns stay 0
            a = tl.where(in_k[None, :], _snake(h, act_alpha_ptr, act_beta_ptr, k, in_k, FAST_SIN), 0.0)
            a = a.to(h_ptr.dtype.element_ty)
        else:  # h already holds SnakeBeta(conv1 + bias) (masked loads: padded K columns are 0)
            a = h
        w = tl.load(w_ptr + k[:, None] * channels + n[None, :], mask=in_k[:, None] & in_n[None, :], other=0.0)
        if IEEE:  # fp32 sums of the rounded tiles without TF32: the fp32 decoder, and 16-bit under the interpreter
            acc = tl.dot(a.to(tl.float32), w.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, w, acc)
    inside = in_m[:, None] & in_n[None, :]
    b, t = m // length, m % length
    y = acc.to(out_ptr.dtype.element_ty).to(tl.float32)  # conv2's output, rounded as cuDNN stores it
    x = tl.load(x_ptr + (b * x_stride_b + t * x_stride_t)[:, None] + n[None, :], mask=inside, other=0.0)
    bias = tl.load(bias_ptr + n, mask=in_n, other=0.0).to(tl.float32)[None, :]
    out = (x.to(tl.float32) + y + bias).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + m[:, None] * channels + n[None, :], out, mask=inside)
    if SNAKE:  # the next SnakeBeta, on the rounded sum (as bias_residual_cl with snake=)
        snake = _snake(out.to(tl.float32), alpha_ptr, beta_ptr, n, in_n, FAST_SIN)
        to = snake_ptr + (b * snake_stride_b + t * snake_stride_t)[:, None] + n[None, :]
        tl.store(to, snake.to(snake_ptr.dtype.element_ty), mask=inside)


# Session 26's choice. Run 108 timed eight: 128x128x64w4s3 was 2.6% shorter over a 128x15 step's tails, and
# none was under the separate kernels (the decoder's unit_tail_kernel is off).
DEFAULT_TILES = Tiles()


def conv2_matrix(weight: torch.Tensor) -> torch.Tensor:
    """A 1x1 Conv1d weight [C_out, C_in, 1] as the kernel's B matrix [C_in, C_out], contiguous (a copy)."""
    if weight.dim() != 3 or weight.shape[2] != 1 or weight.shape[0] != weight.shape[1]:
        raise ValueError(f"unit_tail: conv2 must be a square 1x1 conv, got weight {list(weight.shape)}")
    return weight[:, :, 0].t().contiguous()


def unit_tail(
    h: torch.Tensor,
    h_bias: torch.Tensor | None,
    act: tuple[torch.Tensor, torch.Tensor] | None,
    w: torch.Tensor,
    x: torch.Tensor,
    bias: torch.Tensor,
    snake: tuple[torch.Tensor, torch.Tensor] | None = None,
    snake_out: torch.Tensor | None = None,
    fast_sin: bool = False,
    tiles: Tiles | None = None,
) -> torch.Tensor:
    """x + conv2(SnakeBeta_act(h + h_bias)) + bias for channels-last h (conv1's output, dense [B, T, C] memory) and x
    [B, C, T]; w = conv2_matrix(conv2's weight); act = (alpha, beta) of the unit's second SnakeBeta. Returns the dense
    channels-last output; with `snake` also writes SnakeBeta of it into `snake_out` (as bias_residual_cl).
    h_bias and act None: h already holds the second SnakeBeta's output (the GEMM and epilogue only, for measuring
    what the SnakeBeta prologue costs). `tiles`: the launch's tile sizes (default DEFAULT_TILES)."""
    if (h_bias is None) != (act is None):
        raise ValueError("unit_tail: h_bias and act are given together (the SnakeBeta prologue) or both None")
    prologue = act is not None
    tiles = tiles or DEFAULT_TILES
    if h.dim() != 3 or x.shape != h.shape:
        raise ValueError(f"unit_tail: h and x must be one [B, C, T] shape, got {list(h.shape)} and {list(x.shape)}")
    batch, channels, length = h.shape
    if not h.transpose(1, 2).is_contiguous():
        raise ValueError(f"unit_tail: h must be dense channels-last ([B, T, C] memory), got strides {h.stride()}")
    if not is_channels_last(x):
        raise ValueError(f"unit_tail: x must be channels-last, got strides {x.stride()}")
    params = (*((h_bias, *act) if prologue else ()), bias, *(snake or ()))
    if any(p.shape != (channels,) for p in params) or w.shape != (channels, channels) or not w.is_contiguous():
        raise ValueError(f"unit_tail: per-channel parameters must be [{channels}] and w a contiguous [C_in, C_out]")
    if w.dtype != h.dtype or x.dtype != h.dtype:
        raise ValueError(f"unit_tail: h, x and w must share one dtype, got {h.dtype}, {x.dtype}, {w.dtype}")
    out = channels_last_empty(batch, channels, length, h)
    if snake is None:
        if snake_out is not None:
            raise ValueError("unit_tail: snake_out without snake (alpha, beta)")
        snake, snake_out = (bias, bias), out  # never read: the kernel's SNAKE branch is compiled out
        fused_snake = False
    else:
        fused_snake = True
        check_snake_out("unit_tail", snake_out, h)
    if h.numel() == 0:
        return out
    block_n = min(triton.next_power_of_2(max(channels, 16)), tiles.block_n)
    block_m = 4096 if INTERPRETED else tiles.block_m  # the interpreter runs each program as numpy calls: few, large
    grid = (triton.cdiv(batch * length, block_m), triton.cdiv(channels, block_n))
    h_bias, act = (h_bias, act) if prologue else (bias, (bias, bias))  # never read without the prologue
    _unit_tail_kernel[grid](
        h,
        w,
        x,
        out,
        h_bias.contiguous(),
        *(p.contiguous() for p in act),
        bias.contiguous(),
        *(p.contiguous() for p in snake),
        snake_out,
        batch * length,
        length,
        channels,
        x.stride(0),
        x.stride(2),
        snake_out.stride(0),
        snake_out.stride(2),
        SNAKE=fused_snake,
        FAST_SIN=fast_sin and h.element_size() == 2 and not INTERPRETED,
        IEEE=h.dtype == torch.float32 or INTERPRETED,  # the interpreter's dot has no bf16
        PROLOGUE=prologue,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_K=tiles.block_k,
        num_warps=tiles.num_warps,
        num_stages=tiles.num_stages,
    )
    return out
