"""SnakeBeta and bias + residual kernels for channels-last vocoder activations (channel the fastest dimension).

The channels-last vocoder (`codec_graphs.ChannelsLastVocoder`) keeps every activation as a [B, C, T] tensor whose
memory is [B, T, C] (strides (·, 1, C)), so cuDNN's NHWC conv kernels read and write it without layout conversions.
These kernels are the `kernels/snakebeta.py` ones for that layout: each program owns a [BLOCK_T, BLOCK_C] tile,
loads the per-channel parameters once as a vector along the fastest dimension, and computes in fp32 with one
rounding on store. Batch and time strides are free (`out` may be the tail of a [history ‖ new] buffer, `x` a slice
of a transposed conv's output); the channel stride must be 1.

PyTorch references: `snakebeta_reference` and `bias_residual_reference` in kernels/snakebeta.py, which take the same
logical [B, C, T] tensors whatever their memory layout.

Fast sine (`fast_sin`; the codec's `fast_sine` setting, on by default since run 89): `tl.sin` is libdevice's `sinf`, ~20
instructions of range reduction and polynomial per element, and in the 128x15 codec step the SnakeBeta kernel was
27% of the CUDA time (run 75) for a read and a write of each element. `sin.approx.f32` is one special-function
instruction with an absolute error of ~1e-6, far below a bf16 store's rounding, so it is used only for 16-bit
outputs (the fp32 decoder keeps exact sines) and never under the Triton interpreter, which has no libdevice.
"""

import torch
import triton
import triton.language as tl
from omni.kernels import INTERPRETED
from omni.kernels.snakebeta import check_snakebeta_args, snakebeta_launch_args
from triton.language.extra import libdevice

# Elements per program (BLOCK_T * BLOCK_C). Under the Triton interpreter (CPU tests) every program is a round of
# numpy calls, so there the tiles are large: fewer programs, same results.
TILE = 1 << 16 if INTERPRETED else 4096


def is_channels_last(x: torch.Tensor) -> bool:
    """x [B, C, T] has its channels as the fastest dimension (a [B, T, C] tensor seen through a transpose)."""
    return x.dim() == 3 and (x.stride(1) == 1 or x.shape[1] == 1)


def channels_last_empty(batch: int, channels: int, length: int, like: torch.Tensor) -> torch.Tensor:
    """An uninitialised [B, C, T] tensor with [B, T, C] memory, in `like`'s dtype and device."""
    return torch.empty(batch, length, channels, dtype=like.dtype, device=like.device).transpose(1, 2)


def _blocks(channels: int, length: int, tile: int, block_c: int | None = None) -> tuple[int, int]:
    block_c = block_c or min(triton.next_power_of_2(channels), 128, tile)
    return min(triton.next_power_of_2(length), max(tile // block_c, 1)), block_c


@triton.jit
def _tile(channels, length, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr):
    """This program's [BLOCK_T, BLOCK_C] tile of a [B, T, C] grid (axis 0: batch x T tiles, axis 1: C tiles): its
    row b, times t, channels c, the channel mask and the tile's mask."""
    tiles_t = tl.cdiv(length, BLOCK_T)
    b = (tl.program_id(0) // tiles_t).to(tl.int64)  # large batches overflow int32 offsets
    t = ((tl.program_id(0) % tiles_t) * BLOCK_T + tl.arange(0, BLOCK_T)).to(tl.int64)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    in_c = c < channels
    return b, t, c, in_c, (t < length)[:, None] & in_c[None, :]


@triton.jit
def _snake(x, alpha_ptr, beta_ptr, c, in_c, FAST_SIN: tl.constexpr):
    """SnakeBeta of an fp32 [BLOCK_T, BLOCK_C] tile x over channels c: x + sin(x e^alpha)^2 / (e^beta + 1e-9).
    One function for both kernels, so a fused SnakeBeta has the bits of a separate one."""
    a = tl.exp(tl.load(alpha_ptr + c, mask=in_c, other=0.0).to(tl.float32))[None, :]
    inv_b = (1.0 / (tl.exp(tl.load(beta_ptr + c, mask=in_c, other=0.0).to(tl.float32)) + 1e-9))[None, :]
    if FAST_SIN:
        s = libdevice.fast_sinf(x * a)  # sin.approx.f32 (see the module docstring)
    else:
        s = tl.sin(x * a)
    return x + inv_b * s * s


@triton.jit
def _snakebeta_cl_kernel(
    x_ptr,
    out_ptr,
    alpha_ptr,
    beta_ptr,
    bias_ptr,
    channels,
    length,
    x_stride_b,
    x_stride_t,
    out_stride_b,
    out_stride_t,
    HAS_BIAS: tl.constexpr,
    FAST_SIN: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    b, t, c, in_c, inside = _tile(channels, length, BLOCK_T, BLOCK_C)
    x = tl.load(x_ptr + b * x_stride_b + t[:, None] * x_stride_t + c[None, :], mask=inside, other=0.0)
    x = x.to(tl.float32)
    if HAS_BIAS:  # the preceding conv's bias, added here instead of in a pass of its own
        x += tl.load(bias_ptr + c, mask=in_c, other=0.0).to(tl.float32)[None, :]
    y = _snake(x, alpha_ptr, beta_ptr, c, in_c, FAST_SIN)
    out = out_ptr + b * out_stride_b + t[:, None] * out_stride_t + c[None, :]
    tl.store(out, y.to(out_ptr.dtype.element_ty), mask=inside)


def snakebeta_cl(
    x: torch.Tensor,
    alpha: torch.Tensor,
    beta: torch.Tensor,
    out: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    tile: int = TILE,
    fast_sin: bool = False,
    block_c: int | None = None,
) -> torch.Tensor:
    """SnakeBeta over channels-last x [B, C, T] (+ bias [C] first); alpha/beta [C] log-parameters; out channels-last.
    `fast_sin` (sin.approx) takes effect for 16-bit outputs off the interpreter; `block_c` overrides the
    channels a program covers (default: C's next power of two, at most 128)."""
    batch, channels, length = check_snakebeta_args("snakebeta_cl", x, alpha, beta, bias)
    if not is_channels_last(x):
        raise ValueError(f"snakebeta_cl: x must be channels-last (channel stride 1), got strides {x.stride()}")
    if out is None:
        out = channels_last_empty(batch, channels, length, x)
    elif out.shape != x.shape or not is_channels_last(out) or out.dtype != x.dtype or out.device != x.device:
        raise ValueError(f"snakebeta_cl: out must be a channels-last {list(x.shape)} {x.dtype} view")
    if x.numel() == 0:
        return out
    block_t, block_c = _blocks(channels, length, tile, block_c)
    grid = (batch * triton.cdiv(length, block_t), triton.cdiv(channels, block_c))
    args = snakebeta_launch_args(x, out, alpha, beta, bias, dim=2)  # x_stride_t, out_stride_t: C is contiguous
    fast = fast_sin and out.element_size() == 2 and not INTERPRETED
    _snakebeta_cl_kernel[grid](*args, HAS_BIAS=bias is not None, FAST_SIN=fast, BLOCK_T=block_t, BLOCK_C=block_c)
    return out


@triton.jit
def _bias_residual_cl_kernel(
    x_ptr,
    y_ptr,
    bias_ptr,
    out_ptr,
    alpha_ptr,
    beta_ptr,
    snake_ptr,
    channels,
    length,
    x_stride_b,
    x_stride_t,
    y_stride_b,
    y_stride_t,
    snake_stride_b,
    snake_stride_t,
    SNAKE: tl.constexpr,
    FAST_SIN: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    b, t, c, in_c, inside = _tile(channels, length, BLOCK_T, BLOCK_C)
    x = tl.load(x_ptr + b * x_stride_b + t[:, None] * x_stride_t + c[None, :], mask=inside, other=0.0)
    y = tl.load(y_ptr + b * y_stride_b + t[:, None] * y_stride_t + c[None, :], mask=inside, other=0.0)
    bias = tl.load(bias_ptr + c, mask=in_c, other=0.0).to(tl.float32)[None, :]
    out = (x.to(tl.float32) + y.to(tl.float32) + bias).to(out_ptr.dtype.element_ty)
    # out is a fresh dense [B, T, C] tensor
    tl.store(out_ptr + (b * length + t[:, None]) * channels + c[None, :], out, mask=inside)
    if SNAKE:  # the next SnakeBeta, on the rounded sum as a separate kernel would read it back
        snake = _snake(out.to(tl.float32), alpha_ptr, beta_ptr, c, in_c, FAST_SIN)
        to = snake_ptr + b * snake_stride_b + t[:, None] * snake_stride_t + c[None, :]
        tl.store(to, snake.to(snake_ptr.dtype.element_ty), mask=inside)


def check_snake_out(name: str, snake_out: torch.Tensor | None, like: torch.Tensor) -> None:
    """A fused next-SnakeBeta's output: a channels-last view of like's shape, dtype and device (`name` in the error)."""
    if snake_out is None or snake_out.shape != like.shape or not is_channels_last(snake_out):
        raise ValueError(f"{name}: snake_out must be a channels-last {list(like.shape)} view")
    if snake_out.dtype != like.dtype or snake_out.device != like.device:
        raise ValueError(f"{name}: snake_out must be {like.dtype} on {like.device}")


def bias_residual_cl(
    x: torch.Tensor,
    y: torch.Tensor,
    bias: torch.Tensor,
    tile: int = TILE,
    snake: tuple[torch.Tensor, torch.Tensor] | None = None,
    snake_out: torch.Tensor | None = None,
    fast_sin: bool = False,
) -> torch.Tensor:
    """x + y + bias[c] in one pass over channels-last x, y [B, C, T] (fp32 compute); returns dense channels-last.

    With `snake` (alpha, beta [C]) the same pass also writes SnakeBeta of that (rounded) sum into `snake_out`, a
    channels-last [B, C, T] view (the next conv's input buffer): the bits of `snakebeta_cl` on the returned tensor,
    without reading it back. `fast_sin` as in `snakebeta_cl`."""
    if x.dim() != 3 or y.shape != x.shape or bias.shape != (x.shape[1],):
        raise ValueError(
            f"bias_residual_cl: x and y must be one [B, C, T] shape and bias [C], got {list(x.shape)}, "
            f"{list(y.shape)}, {list(bias.shape)}"
        )
    if not (is_channels_last(x) and is_channels_last(y)):
        raise ValueError(f"bias_residual_cl: x and y must be channels-last, got strides {x.stride()}, {y.stride()}")
    batch, channels, length = x.shape
    out = channels_last_empty(batch, channels, length, x)
    if snake is None:
        if snake_out is not None:
            raise ValueError("bias_residual_cl: snake_out without snake (alpha, beta)")
        alpha = beta = snake_out = out  # never read: the kernel's SNAKE branch is compiled out
    else:
        alpha, beta = (p.contiguous() for p in snake)
        check_snakebeta_args("bias_residual_cl", x, alpha, beta, None)
        check_snake_out("bias_residual_cl", snake_out, x)
    if x.numel() == 0:
        return out
    block_t, block_c = _blocks(channels, length, tile)
    grid = (batch * triton.cdiv(length, block_t), triton.cdiv(channels, block_c))
    _bias_residual_cl_kernel[grid](
        x,
        y,
        bias.contiguous(),
        out,
        alpha,
        beta,
        snake_out,
        channels,
        length,
        x.stride(0),
        x.stride(2),
        y.stride(0),
        y.stride(2),
        snake_out.stride(0),
        snake_out.stride(2),
        SNAKE=snake is not None,
        FAST_SIN=fast_sin and x.element_size() == 2 and not INTERPRETED,
        BLOCK_T=block_t,
        BLOCK_C=block_c,
    )
    return out
