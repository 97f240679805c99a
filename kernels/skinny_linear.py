"""`F.linear` for a few rows: y = x @ W.T (+ b) with N / BLOCK_N programs, each streaming BLOCK_N whole rows of W.

Why: at one row, cuBLAS runs the code predictor's [rows, 2048] x [1024, 2048]^T (its attention's o_proj, 75 calls a
1.7B step, and the small-to-MTP projection, 15) as `nvjet_sm90_tst_8x64_64x16_2x1`: 16 thread blocks for a 4 MB
weight, 9.5 or 12 us a call depending on the graph capture (runs 149-151), ~0.9 ms of a 5 ms 1-row step. Here a
program per 8 output features (128 programs for N = 1024) reads its 8 x K weights once for all rows.

Numerics: fp32 products and sums (BLOCK_K columns at a time, then across the chunks in order), the bias added in fp32,
one rounding to x's dtype. cuBLAS sums in another order: the same values within the last bit, not the same bits.
Deterministic: no atomics, no split of K across programs.
"""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from omni.kernels import INTERPRETED

MAX_ROWS = 8  # beyond this F.linear (cuBLAS picks well once there are rows to tile)
BLOCK_N = 8


@triton.jit
def _skinny_linear_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    rows,
    K,
    N,
    x_stride,
    y_stride,
    ROWS_PAD: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    r = tl.arange(0, ROWS_PAD)
    n_ok, r_ok = n < N, r < rows
    acc = tl.zeros((ROWS_PAD, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        k_ok = k < K
        w = tl.load(w_ptr + n[:, None].to(tl.int64) * K + k[None, :], mask=n_ok[:, None] & k_ok[None, :], other=0.0)
        x = tl.load(x_ptr + r[:, None] * x_stride + k[None, :], mask=r_ok[:, None] & k_ok[None, :], other=0.0)
        acc += tl.sum(x.to(tl.float32)[:, None, :] * w.to(tl.float32)[None, :, :], axis=2)
    if HAS_BIAS:
        acc += tl.load(b_ptr + n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    out = acc.to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + r[:, None] * y_stride + n[None, :], out, mask=r_ok[:, None] & n_ok[None, :])


def skinny_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """`F.linear(x, weight, bias)` through the kernel when x has at most MAX_ROWS rows (x [..., K], weight [N, K]
    contiguous, bias [N]); otherwise F.linear itself."""
    k = x.shape[-1]
    rows = x.numel() // k if k else 0
    if rows == 0 or rows > MAX_ROWS:
        return F.linear(x, weight, bias)
    if weight.dim() != 2 or weight.shape[1] != k or not weight.is_contiguous():
        raise ValueError(f"weight must be a contiguous [N, {k}] matrix, got {tuple(weight.shape)}")
    if x.dtype != weight.dtype or (bias is not None and bias.dtype != weight.dtype):
        raise ValueError(f"x, weight and bias must share a dtype, got {x.dtype} and {weight.dtype}")
    if bias is not None and bias.shape != (weight.shape[0],):
        raise ValueError(f"bias must be [{weight.shape[0]}], got {tuple(bias.shape)}")
    n = weight.shape[0]
    x2 = x.reshape(rows, k)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y = torch.empty(rows, n, dtype=x.dtype, device=x.device)
    rows_pad = triton.next_power_of_2(rows)
    _skinny_linear_kernel[(triton.cdiv(n, BLOCK_N),)](
        x2, weight, bias if bias is not None else weight, y, rows, k, n, x2.stride(0), y.stride(0),
        ROWS_PAD=rows_pad, HAS_BIAS=bias is not None, BLOCK_N=BLOCK_N,
        BLOCK_K=max(64, 512 // rows_pad) if not INTERPRETED else 256, num_warps=4,
    )  # fmt: skip
    return y.reshape(*x.shape[:-1], n)
