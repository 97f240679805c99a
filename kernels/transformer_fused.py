"""Fused element-wise work of a Qwen3 decoder layer: RMSNorm (alone or with the residual add before it), per-head
RMSNorm + RoPE (or RoPE alone, as the codec's transformer has it), SiLU-gated product.

Inside a CUDA graph the talker step is bound by its kernel count (about 60 kernels per layer, 28 talker layers
plus 15 × 5 code-predictor layers per frame), not by bytes: PyTorch runs an RMSNorm as ~7 kernels (cast, square,
mean, add, rsqrt, multiply, cast, scale) and RoPE as ~6. Each function here is one kernel.

They reproduce the PyTorch module's roundings, not only its maths: compute in fp32, round to the activation dtype
exactly where the eager code does (after the normalisation, after each product of RoPE, after SiLU), so a bf16
model gives the eager results up to the order of one fp32 sum. Compiled for sm_90, LLVM would contract a product
and the sum after it into one FMA where nothing stops it, skipping that product's rounding (RoPE's
`y * cos + rotate(y) * sin` had 8 `fma.rn.bf16` a kernel in bf16, `fma.rn.f32` in fp32, and the LayerScale's
`x + scale * d` one: run 119's failed bitwise check; found in session 31 from the PTX), so those products go
through `_rounded_product`, an explicit `mul.rn.f32`.
"""

import torch
import triton
import triton.language as tl
from omni.kernels import INTERPRETED
from omni.kernels.programmatic_launch import launch_options, wait_for_prior_kernels

# The interpreter runs no PTX (and numpy contracts nothing): plain products there.
_EXACT_MUL = tl.constexpr(not INTERPRETED)


def add_rms_norm_reference(
    x: torch.Tensor, delta: torch.Tensor, weight: torch.Tensor, eps: float, scale: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The eager residual add (of `scale * delta`, rounded, where a LayerScale scales it: the codec's transformer),
    then the RMSNorm of its (rounded) sum."""
    total = x + (delta if scale is None else scale * delta)
    return total, rms_norm_reference(total, weight, eps)


def rms_norm_reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """The eager definition (talker.RMSNorm): normalise in fp32, round, scale in the input dtype."""
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * xf.to(x.dtype)


def rms_norm_rope_reference(
    x: torch.Tensor, weight: torch.Tensor, eps: float, cos: torch.Tensor, sin: torch.Tensor
) -> torch.Tensor:
    """Per-head RMSNorm then NeoX RoPE: x [B, T, heads, D], cos/sin [B, T, 1, D] in x's dtype."""
    return rope_reference(rms_norm_reference(x, weight, eps), cos, sin)


def rope_reference(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """NeoX RoPE as the eager modules write it: x * cos + rotate_half(x) * sin."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def silu_mul_reference(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(gate) * up


@triton.jit
def _rounded_product(a, b):
    """a * b in fp32 (broadcast), rounded on its own: an explicit `mul.rn.f32`, so the compiler cannot contract it
    with a sum after it into an FMA (`libdevice.mul_rn` is `mul.rn.ftz`, which flushes denormals PyTorch keeps)."""
    if _EXACT_MUL:
        return tl.inline_asm_elementwise(
            "mul.rn.f32 $0, $1, $2;", "=f,f,f", [a, b], dtype=tl.float32, is_pure=True, pack=1
        )
    else:
        return a * b


@triton.jit
def _store_rms_norm(x, w_ptr, out_row_ptr, offs, inside, n, eps):
    """One row's RMSNorm (x: the row in fp32) stored at out_row_ptr + offs, rounded as the eager module rounds; the
    one copy of this arithmetic, so a norm gives the same bits whichever kernel runs it."""
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + eps)
    y = (x * r).to(out_row_ptr.dtype.element_ty).to(tl.float32)  # rounded as `xf.to(x.dtype)`
    w = tl.load(w_ptr + offs, mask=inside, other=0.0).to(tl.float32)
    tl.store(out_row_ptr + offs, (w * y).to(out_row_ptr.dtype.element_ty), mask=inside)


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, out_ptr, n, x_stride, out_stride, eps, BLOCK: tl.constexpr, PDL: tl.constexpr):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + row * x_stride + offs, mask=inside, other=0.0).to(tl.float32)
    _store_rms_norm(x, w_ptr, out_ptr + row * out_stride, offs, inside, n, eps)


@triton.jit
def _add_rms_norm_kernel(
    x_ptr,
    d_ptr,
    scale_ptr,
    w_ptr,
    sum_ptr,
    out_ptr,
    n,
    x_stride,
    d_stride,
    sum_stride,
    out_stride,
    eps,
    HAS_SCALE: tl.constexpr,
    BLOCK: tl.constexpr,
    PDL: tl.constexpr,
):
    # The residual add and the RMSNorm that reads its sum: the sum is rounded to the dtype (as `x + d` is) and
    # stored, and the norm is `_rms_norm_kernel`'s arithmetic on that rounded sum. With a LayerScale, d is first
    # scaled and rounded, as `scale * d` is.
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + row * x_stride + offs, mask=inside, other=0.0).to(tl.float32)
    d = tl.load(d_ptr + row * d_stride + offs, mask=inside, other=0.0).to(tl.float32)
    if HAS_SCALE:
        scale = tl.load(scale_ptr + offs, mask=inside, other=0.0).to(tl.float32)
        d = _rounded_product(scale, d)
        d = d.to(sum_ptr.dtype.element_ty).to(tl.float32)
    total = (x + d).to(sum_ptr.dtype.element_ty)
    tl.store(sum_ptr + row * sum_stride + offs, total, mask=inside)
    _store_rms_norm(total.to(tl.float32), w_ptr, out_ptr + row * out_stride, offs, inside, n, eps)


# Under the interpreter a conversion to fp8 breaks ties and carries into the exponent wrongly (1.0625 -> 1.125,
# 7.96 -> 4.0 with Triton 3.7.1), while values fp8 holds exactly convert right: there `stored_as` rounds first.
_ROUND_BEFORE_FP8 = tl.constexpr(INTERPRETED)


@triton.jit
def _round_to_e4m3(y):
    """fp32 y (|y| <= 448) rounded to nearest even at e4m3's spacing: 2**(e - 3) for |y| in [2**e, 2**(e + 1)),
    e >= -6, and the subnormals' 2**-9 below. The exponent read from the bits; |y| rounded by adding and taking away
    1.5 * 2**23, which fp32 arithmetic rounds to nearest even (|y| / spacing <= 16); the sign put back after by a
    product, so a small negative value gives -0 as a conversion does (Triton's negation is 0 - x: +0)."""
    exponent = ((y.to(tl.int32, bitcast=True) >> 23) & 0xFF) - 127
    spacing = ((tl.maximum(exponent, -6) - 3 + 127) << 23).to(tl.float32, bitcast=True)
    rounded = ((tl.abs(y) / spacing + 12582912.0) - 12582912.0) * spacing
    return rounded * tl.where(y < 0, -1.0, 1.0)


@triton.jit
def stored_as(x, ptr):
    """x converted to the element type of `ptr` for a store there. Into fp8 (an fp8 K/V cache, omni/fp8.py):
    clamped to +-448 in fp32, then rounded to nearest even, as `to_fp8` does in PyTorch."""
    if ptr.dtype.element_ty == tl.float8e4nv:
        y = tl.clamp(x.to(tl.float32), -448.0, 448.0)
        if _ROUND_BEFORE_FP8:
            y = _round_to_e4m3(y)
        y = y.to(tl.float8e4nv, fp_downcast_rounding="rtne")
    else:
        y = x.to(ptr.dtype.element_ty)
    return y


@triton.jit
def _store_norm_rope(
    x_row_ptr,
    w_ptr,
    cos_row_ptr,
    sin_row_ptr,
    out_row_ptr,
    heads,
    eps,
    HALF: tl.constexpr,
    HEADS_PAD: tl.constexpr,
    HALF_PAD: tl.constexpr,
    NORM: tl.constexpr,
):
    """One token's heads (packed at x_row_ptr): per-head RMSNorm (NORM) then NeoX RoPE, stored packed at
    out_row_ptr, rounded as the eager ops round in x's dtype (then to fp8 where out_row_ptr is an fp8 cache's, as a
    PyTorch write into it converts); the one copy of this arithmetic, so q and k get the same bits whichever kernel
    runs it (here, or kv_write's with the cache write)."""
    # Each head as two halves (RoPE pairs element i with i + HALF).
    h = tl.arange(0, HEADS_PAD)[:, None]
    i = tl.arange(0, HALF_PAD)[None, :]
    inside = (h < heads) & (i < HALF)
    lo_offs = h * (2 * HALF) + i
    dt = x_row_ptr.dtype.element_ty
    y1 = tl.load(x_row_ptr + lo_offs, mask=inside, other=0.0).to(tl.float32)
    y2 = tl.load(x_row_ptr + lo_offs + HALF, mask=inside, other=0.0).to(tl.float32)
    if NORM:  # per-head RMSNorm first (the talker's q/k norms); without it, RoPE alone (the codec's transformer)
        r = 1.0 / tl.sqrt((tl.sum(y1 * y1, axis=1) + tl.sum(y2 * y2, axis=1)) / (2 * HALF) + eps)
        w1 = tl.load(w_ptr + i, mask=i < HALF, other=0.0).to(tl.float32)
        w2 = tl.load(w_ptr + i + HALF, mask=i < HALF, other=0.0).to(tl.float32)
        y1 = (w1 * (y1 * r[:, None]).to(dt).to(tl.float32)).to(dt).to(tl.float32)
        y2 = (w2 * (y2 * r[:, None]).to(dt).to(tl.float32)).to(dt).to(tl.float32)
    c1 = tl.load(cos_row_ptr + i, mask=i < HALF, other=0.0).to(tl.float32)
    c2 = tl.load(cos_row_ptr + i + HALF, mask=i < HALF, other=0.0).to(tl.float32)
    s1 = tl.load(sin_row_ptr + i, mask=i < HALF, other=0.0).to(tl.float32)
    s2 = tl.load(sin_row_ptr + i + HALF, mask=i < HALF, other=0.0).to(tl.float32)
    # y * cos + rotate_half(y) * sin, each product rounded as the eager bf16 ops round it
    o1 = _rounded_product(y1, c1).to(dt).to(tl.float32) + _rounded_product(-y2, s1).to(dt).to(tl.float32)
    o2 = _rounded_product(y2, c2).to(dt).to(tl.float32) + _rounded_product(y1, s2).to(dt).to(tl.float32)
    tl.store(out_row_ptr + lo_offs, stored_as(o1.to(dt), out_row_ptr), mask=inside)
    tl.store(out_row_ptr + lo_offs + HALF, stored_as(o2.to(dt), out_row_ptr), mask=inside)


@triton.jit
def _rms_norm_rope_kernel(
    x_ptr,
    w_ptr,
    cos_ptr,
    sin_ptr,
    out_ptr,
    heads,
    x_stride,
    out_stride,
    rope_stride,
    eps,
    HALF: tl.constexpr,
    HEADS_PAD: tl.constexpr,
    HALF_PAD: tl.constexpr,
    NORM: tl.constexpr,
    PDL: tl.constexpr,
):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0).to(tl.int64)  # one program per token: all its heads
    _store_norm_rope(
        x_ptr + row * x_stride,
        w_ptr,
        cos_ptr + row * rope_stride,
        sin_ptr + row * rope_stride,
        out_ptr + row * out_stride,
        heads,
        eps,
        HALF,
        HEADS_PAD,
        HALF_PAD,
        NORM,
    )


@triton.jit
def silu_rounded(g, dt: tl.constexpr):
    """F.silu(g) from g in fp32, rounded to dt as F.silu rounds; the one copy of this arithmetic."""
    return (g / (1.0 + tl.exp(-g))).to(dt)


@triton.jit
def silu_times(g, u, dt: tl.constexpr):
    """F.silu(g) * u from g and u in fp32, rounded to dt as the eager ops round (F.silu rounds to the dtype before
    the product), so skinny_linear's gated input (`silu_gate`) gives silu_mul's bits."""
    s = silu_rounded(g, dt).to(tl.float32)
    return (s * u).to(dt)


@triton.jit
def _silu_kernel(x_ptr, out_ptr, n, x_stride, BLOCK: tl.constexpr, PDL: tl.constexpr):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + row * x_stride + offs, mask=inside, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * n + offs, silu_rounded(x, out_ptr.dtype.element_ty), mask=inside)


@triton.jit
def _silu_mul_kernel(g_ptr, u_ptr, out_ptr, n, g_stride, u_stride, out_stride, BLOCK: tl.constexpr, PDL: tl.constexpr):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    g = tl.load(g_ptr + row * g_stride + offs, mask=inside, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + row * u_stride + offs, mask=inside, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_stride + offs, silu_times(g, u, out_ptr.dtype.element_ty), mask=inside)


def _rows(x: torch.Tensor, width: int) -> tuple[torch.Tensor, int]:
    """x [..., width] with a contiguous last dim as a 2-D view [rows, width]; returns it and its row stride."""
    if x.stride(-1) != 1:
        raise ValueError("the last dim must be contiguous")
    rows = x.reshape(-1, width) if x.dim() != 2 else x
    return rows, rows.stride(0)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """`rms_norm_reference` in one kernel over rows of x [..., n] (row-strided views welcome)."""
    n = x.shape[-1]
    rows, stride = _rows(x, n)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _rms_norm_kernel[(rows.shape[0],)](
        rows,
        weight,
        out,
        n,
        stride,
        n,
        eps,
        BLOCK=triton.next_power_of_2(n),
        num_warps=4 if n >= 1024 else 1,
        **launch_options(),
    )
    return out


def add_rms_norm(
    x: torch.Tensor, delta: torch.Tensor, weight: torch.Tensor, eps: float, scale: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(x + delta, rms_norm(x + delta)) in one kernel: a decoder's residual add and the norm after it; with `scale`
    [n] (a LayerScale, in x's dtype) the add is x + scale * delta, rounded as the eager modules round it."""
    n = x.shape[-1]
    if delta.shape != x.shape or delta.dtype != x.dtype:
        raise ValueError(f"delta {tuple(delta.shape)} {delta.dtype} must match x {tuple(x.shape)} {x.dtype}")
    if scale is not None and (scale.shape != (n,) or scale.dtype != x.dtype):
        raise ValueError(f"scale {tuple(scale.shape)} {scale.dtype} must be [{n}] in {x.dtype}")
    x_rows, x_stride = _rows(x, n)
    d_rows, d_stride = _rows(delta, n)
    total = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _add_rms_norm_kernel[(x_rows.shape[0],)](
        x_rows, d_rows, weight if scale is None else scale, weight, total, out, n, x_stride, d_stride, n, n, eps,
        HAS_SCALE=scale is not None, BLOCK=triton.next_power_of_2(n),
        num_warps=4 if n >= 1024 else 1, **launch_options(),
    )  # fmt: skip
    return total, out


def rms_norm_rope(
    x: torch.Tensor, weight: torch.Tensor | None, eps: float, cos: torch.Tensor, sin: torch.Tensor
) -> torch.Tensor:
    """`rms_norm_rope_reference` in one kernel. x [B, T, heads*D] or [B, T, heads, D] (a column slice of a fused
    QKV projection is fine: only the last dim must be contiguous); cos/sin [B, T, 1, D]. Returns [B, T, heads, D].
    `weight` None: no norm, RoPE alone (`rope_reference`; x must then be [B, T, heads, D])."""
    if weight is None and x.dim() != 4:
        raise ValueError("RoPE alone needs x as [B, T, heads, D]")
    b, t = x.shape[:2]
    dim = weight.shape[0] if weight is not None else x.shape[3]
    width = x.shape[2] * x.shape[3] if x.dim() == 4 else x.shape[2]
    heads = width // dim
    if x.stride(-1) != 1 or (x.dim() == 4 and x.stride(2) != dim):
        raise ValueError("heads must be packed along a contiguous last dim")
    # Tokens as rows at one stride: a view where they are (a size-1 dim's stride can be anything: a GEMM's [B, 1, N]
    # output may say 32 there), else a copy.
    rows = x.reshape(b * t, *x.shape[2:])
    out = torch.empty(b, t, heads, dim, dtype=x.dtype, device=x.device)
    cos2, sin2 = cos.reshape(b * t, dim), sin.reshape(b * t, dim)
    half = dim // 2
    _rms_norm_rope_kernel[(b * t,)](
        rows,
        rows if weight is None else weight,  # an unused pointer without the norm
        cos2,
        sin2,
        out,
        heads,
        rows.stride(0),
        heads * dim,
        cos2.stride(0),
        eps,
        HALF=half,
        HEADS_PAD=triton.next_power_of_2(heads),
        HALF_PAD=triton.next_power_of_2(half),
        NORM=weight is not None,
        **launch_options(),
    )
    return out


def silu(x: torch.Tensor) -> torch.Tensor:
    """F.silu(x) in a kernel that launches programmatically with the step's others (the talker's text projection,
    between its two GEMMs); x [..., n] with a contiguous last dim."""
    n = x.shape[-1]
    rows, stride = _rows(x, n)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    block = 1024
    if rows.shape[0]:
        _silu_kernel[(rows.shape[0], triton.cdiv(n, block))](rows, out, n, stride, BLOCK=block, **launch_options())
    return out


def silu_mul(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """F.silu(gate) * up in one kernel; gate and up [..., n] may be column slices of one fused projection."""
    n = gate.shape[-1]
    g_rows, g_stride = _rows(gate, n)
    u_rows, u_stride = _rows(up, n)
    out = torch.empty(gate.shape, dtype=gate.dtype, device=gate.device)
    block = 1024
    _silu_mul_kernel[(g_rows.shape[0], triton.cdiv(n, block))](
        g_rows, u_rows, out, n, g_stride, u_stride, n, BLOCK=block, **launch_options()
    )
    return out
