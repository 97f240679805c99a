"""`F.linear` for many rows (128 and up): y = x @ W.T by [BLOCK_M, BLOCK_N] output tiles, a program each, its K
loop of `tl.dot` over TMA-loaded tiles of x and W, fp32 accumulation, one rounding.

Why: at 512 rows the talker's GEMMs run through cuBLAS at 328-724 TFLOP/s (run 222, an H100), and the least
efficient are the narrowest: the code predictor's o_proj [1024, 2048] and down [1024, 3072] and the backbone's o_proj
[2048, 2048], whose outputs make 32-64 tiles of 128 x 128 on a card of 132 SMs. Here the tile size is the caller's
(`Tiles`, by weight shape), so a narrow output can take small tiles and fill the card. tools/bench_wide_linear.py times
it against cuBLAS by weight and rows.

A gated output (`gated=True`): W holds an MLP's gate and up projections stacked ([2I, K], gate first) and each
program runs both halves' tiles for its I columns over one K loop, then stores SiLU(gate) * up rounded as
`transformer_fused.silu_mul` rounds it (each half rounded to x's dtype first, as a GEMM stores it). So the MLP's
gate_up GEMM needs no silu_mul kernel after it, and writes half the bytes. The bits are this kernel's ungated output
put through silu_mul: one K loop gives each half the same sums as its own call.

Numerics: the MMA's fp32 sums in K order, one rounding. cuBLAS sums in another order: within the last bit, not its
bits. A row's bits do not depend on the other rows (no split of K). fp32 inputs (and every dtype under the
interpreter, whose numpy has no bf16) take the exact products (`input_precision="ieee"`), not TF32.
"""

import torch
import triton
import triton.language as tl
from omni.kernels import INTERPRETED
from omni.kernels.tiles import Tiles
from omni.kernels.transformer_fused import silu_times
from triton.tools.tensor_descriptor import TensorDescriptor

# Tiles by the weight's shape [N, K] (the 1.7B talker's and code predictor's bias-free GEMMs); a weight not here stays
# on cuBLAS. WIDE_GATED_TILES: the MLPs' gate_up [2I, K] with SiLU(gate) * up in the epilogue. Filled from
# tools/bench_wide_linear.py's runs; empty, `use_wide_linear` with them changes nothing.
WIDE_TILES: dict[tuple[int, int], Tiles] = {}
WIDE_GATED_TILES: dict[tuple[int, int], Tiles] = {}


def tables_from_json(data: dict) -> tuple[dict[tuple[int, int], Tiles], dict[tuple[int, int], Tiles]]:
    """(tiles, gated tiles) from {"tiles": {"NxK": "BMxBNxBKwWsS", ...}, "gated": {...}}, the form
    tools/bench_wide_linear.py's --tables-out writes (bench_talker_step's --wide-tiles reads it)."""

    def table(entries: dict) -> dict[tuple[int, int], Tiles]:
        out = {}
        for shape, tiles in entries.items():
            n, k = (int(v) for v in shape.split("x"))
            out[(n, k)] = Tiles.parse(tiles)
        return out

    return table(data.get("tiles", {})), table(data.get("gated", {}))


# Consecutive programs take GROUP_M row tiles of one column band before the next band, so the programs running at
# once read each weight tile from L2 after the first (Triton's matmul tutorial's grouped order).
GROUP_M = 8


@triton.jit
def _wide_linear_kernel(
    x_desc,
    w_desc,
    y_ptr,
    M,
    N,
    K,
    y_stride,
    up_offset,
    GATED: tl.constexpr,
    IEEE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    band = GROUP * tiles_n
    first_m = (pid // band) * GROUP
    group_m = min(tiles_m - first_m, GROUP)
    m0 = (first_m + (pid % band) % group_m) * BLOCK_M
    n0 = ((pid % band) // group_m) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):  # past K (and past M or N) the descriptors give zeros
        a = x_desc.load([m0, k0])
        w = w_desc.load([n0, k0])
        if IEEE:
            acc = tl.dot(a.to(tl.float32), w.to(tl.float32).T, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, w.T, acc)
        if GATED:
            u = w_desc.load([n0 + up_offset, k0])
            if IEEE:
                up = tl.dot(a.to(tl.float32), u.to(tl.float32).T, up, input_precision="ieee")
            else:
                up = tl.dot(a, u.T, up)
    dt = y_ptr.dtype.element_ty
    if GATED:  # each half rounded as a GEMM stores it, then silu_mul's arithmetic
        out = silu_times(acc.to(dt).to(tl.float32), up.to(dt).to(tl.float32), dt)
    else:
        out = acc.to(dt)
    m = m0 + tl.arange(0, BLOCK_M)
    n = n0 + tl.arange(0, BLOCK_N)
    inside = (m < M)[:, None] & (n < N)[None, :]
    tl.store(y_ptr + m.to(tl.int64)[:, None] * y_stride + n[None, :], out, mask=inside)


def wide_linear(x: torch.Tensor, weight: torch.Tensor, tiles: Tiles, gated: bool = False) -> torch.Tensor:
    """x [..., K] @ weight [N, K].T -> [..., N] (no bias: the talker's GEMMs have none); with `gated`, weight is
    [2I, K] (gate rows, then up rows) and the result SiLU(x @ gate.T) * (x @ up.T) [..., I]."""
    k = x.shape[-1]
    n_weight = weight.shape[0]
    if weight.shape[1] != k or not weight.is_contiguous() or weight.dtype != x.dtype:
        raise ValueError(f"wide_linear: weight {list(weight.shape)} {weight.dtype} for x [..., {k}] {x.dtype}")
    if gated and n_weight % 2:
        raise ValueError(f"wide_linear: a gated weight stacks gate and up: {n_weight} rows is odd")
    if (k * x.element_size()) % 16:
        raise ValueError(f"wide_linear: K {k}: rows must be multiples of 16 bytes (TMA)")
    rows = x.reshape(-1, k)
    if rows.stride(-1) != 1 or (rows.stride(0) * x.element_size()) % 16:
        rows = rows.contiguous()
    n = n_weight // 2 if gated else n_weight
    y = torch.empty(rows.shape[0], n, dtype=x.dtype, device=x.device)
    m = rows.shape[0]
    if m:
        x_desc = TensorDescriptor.from_tensor(rows, [tiles.block_m, tiles.block_k])
        w_desc = TensorDescriptor.from_tensor(weight, [tiles.block_n, tiles.block_k])
        grid = (triton.cdiv(m, tiles.block_m) * triton.cdiv(n, tiles.block_n),)
        _wide_linear_kernel[grid](
            x_desc,
            w_desc,
            y,
            m,
            n,
            k,
            y.stride(0),
            n if gated else 0,
            GATED=gated,
            IEEE=x.dtype == torch.float32 or INTERPRETED,
            BLOCK_M=tiles.block_m,
            BLOCK_N=tiles.block_n,
            BLOCK_K=tiles.block_k,
            GROUP=GROUP_M,
            num_warps=tiles.num_warps,
            num_stages=tiles.num_stages,
        )
    return y.reshape(*x.shape[:-1], n)
