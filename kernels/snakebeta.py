"""Fused SnakeBeta activation: y = x + sin²(e^α·x) / (e^β + 1e-9), per channel, in one pass over memory.

PyTorch's eager SnakeBeta is about six element-wise kernels over [B, C, T] (mul, sin, pow, mul, add plus the
per-channel exps), each reading and writing the whole activation; the vocoder runs it over 24 kHz activations,
so it is bound by memory traffic. This kernel reads x once and writes y once, computing in fp32 (for bf16 inputs
the only rounding is the final store, so it is at least as accurate as the eager bf16 chain).

`out` may be a strided view (e.g. the tail of a preallocated [history ‖ new] buffer), so the caller can save the
copy of a following concatenation.
"""

import torch
import triton
import triton.language as tl


def snakebeta_reference(
    x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """The PyTorch definition (as the codec's SnakeBeta module): x [B, C, T], log-parameters alpha/beta [C]."""
    if bias is not None:
        x = x + bias[None, :, None]
    a = alpha.exp()[None, :, None]
    b = beta.exp()[None, :, None]
    return x + (1.0 / (b + 1e-9)) * torch.sin(x * a).pow(2)


def check_snakebeta_args(
    name: str, x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor, bias: torch.Tensor | None
) -> tuple[int, int, int]:
    """(B, C, T) of x [B, C, T], once alpha/beta (and bias, if given) are checked to be [C]; errors start `name:`."""
    if x.dim() != 3:
        raise ValueError(f"{name}: x must be [B, C, T], got shape {list(x.shape)}")
    batch, channels, length = x.shape
    if alpha.shape != (channels,) or beta.shape != (channels,):
        raise ValueError(f"{name}: alpha/beta must be [{channels}], got {list(alpha.shape)} and {list(beta.shape)}")
    if bias is not None and bias.shape != (channels,):
        raise ValueError(f"{name}: bias must be [{channels}], got {list(bias.shape)}")
    return batch, channels, length


def snakebeta_launch_args(
    x: torch.Tensor, out: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor, bias: torch.Tensor | None, dim: int
) -> tuple:
    """The positional arguments both SnakeBeta kernels (this one and `channels_last.py`'s) take, in their order:
    tensors, per-channel parameters (alpha stands in for an absent bias: HAS_BIAS=False never reads it), sizes, and
    x's and out's batch stride and stride along `dim` (the one of C, T that is not contiguous)."""
    params = (alpha.contiguous(), beta.contiguous(), alpha if bias is None else bias.contiguous())
    return (x, out, *params, x.shape[1], x.shape[2], x.stride(0), x.stride(dim), out.stride(0), out.stride(dim))


@triton.jit
def _snakebeta_kernel(
    x_ptr,
    out_ptr,
    alpha_ptr,
    beta_ptr,
    bias_ptr,
    channels,
    length,
    x_stride_b,
    x_stride_c,
    out_stride_b,
    out_stride_c,
    HAS_BIAS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)  # one (batch, channel) row per program along axis 0
    b = (row // channels).to(tl.int64)  # large batches overflow int32 offsets
    c = row % channels
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < length
    x = tl.load(x_ptr + b * x_stride_b + c * x_stride_c + offs, mask=inside, other=0.0).to(tl.float32)
    if HAS_BIAS:  # the preceding conv's bias, added here instead of in a pass of its own
        x += tl.load(bias_ptr + c).to(tl.float32)
    a = tl.exp(tl.load(alpha_ptr + c).to(tl.float32))
    inv_b = 1.0 / (tl.exp(tl.load(beta_ptr + c).to(tl.float32)) + 1e-9)
    s = tl.sin(x * a)
    y = x + inv_b * s * s
    tl.store(out_ptr + b * out_stride_b + c * out_stride_c + offs, y.to(out_ptr.dtype.element_ty), mask=inside)


def snakebeta(
    x: torch.Tensor,
    alpha: torch.Tensor,
    beta: torch.Tensor,
    out: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    block: int = 1024,
) -> torch.Tensor:
    """Fused SnakeBeta over x [B, C, T] (+ bias [C] first, if given); alpha/beta [C] are the log-parameters."""
    batch, channels, length = check_snakebeta_args("snakebeta", x, alpha, beta, bias)
    if x.stride(-1) != 1:
        x = x.contiguous()
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    elif out.shape != x.shape or out.stride(-1) != 1 or out.dtype != x.dtype or out.device != x.device:
        raise ValueError(f"snakebeta: out must be a {list(x.shape)} {x.dtype} view with a contiguous last dim")
    if x.numel() == 0:
        return out
    block = min(block, triton.next_power_of_2(length))
    grid = (batch * channels, triton.cdiv(length, block))
    args = snakebeta_launch_args(x, out, alpha, beta, bias, dim=1)  # x_stride_c, out_stride_c: rows are (b, c)
    _snakebeta_kernel[grid](*args, HAS_BIAS=bias is not None, BLOCK=block)
    return out


# ----------------------------------------------------------------------------------------------------------------
# The residual unit's tail: x + conv2(h) + bias, where the conv ran without its bias.


def bias_residual_reference(x: torch.Tensor, y: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return x + (y + bias[None, :, None])


@triton.jit
def _bias_residual_kernel(x_ptr, y_ptr, bias_ptr, out_ptr, channels, length, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = row % channels
    base = row.to(tl.int64) * length  # contiguous [B, C, T]
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < length
    x = tl.load(x_ptr + base + offs, mask=inside, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + base + offs, mask=inside, other=0.0).to(tl.float32)
    out = x + y + tl.load(bias_ptr + c).to(tl.float32)
    tl.store(out_ptr + base + offs, out.to(out_ptr.dtype.element_ty), mask=inside)


def bias_residual(x: torch.Tensor, y: torch.Tensor, bias: torch.Tensor, block: int = 1024) -> torch.Tensor:
    """x + y + bias[c] in one pass (fp32 compute, one rounding); x, y [B, C, T], bias [C]."""
    if x.dim() != 3 or y.shape != x.shape or bias.shape != (x.shape[1],):
        raise ValueError(
            f"bias_residual: x and y must be one [B, C, T] shape and bias [C], got {list(x.shape)}, "
            f"{list(y.shape)}, {list(bias.shape)}"
        )
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    if x.numel() == 0:
        return out
    batch, channels, length = x.shape
    block = min(block, triton.next_power_of_2(length))
    _bias_residual_kernel[(batch * channels, triton.cdiv(length, block))](
        x, y, bias.contiguous(), out, channels, length, BLOCK=block
    )
    return out
