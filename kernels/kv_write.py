"""K and V of a forward written into a layer's slot cache in one kernel.

`cache.k[layer, slots[:, None], positions] = k` (and the same for v) is an advanced-index put: PyTorch runs one
`index_put` kernel per tensor, each a few microseconds for ~1 MB. A 1.7B talker step at 512 rows makes 206 of
them (2 for each of the talker's 28 layers and of the code predictor's 5 layers × 15 passes): 1.20 of 17.57 ms of
CUDA time in run 80's eager profile. Here one program per (row, position) copies that token's K and V
([kv_heads × head_dim] each, contiguous) to (slot, position): one launch per layer for both tensors, a plain copy,
so the cache holds the same bits as with the index put.

`norm_rope_write_kv` goes one kernel further for the talker's fused attention (q/k/v from one GEMM): per token it
applies the per-head q and k RMSNorm and RoPE (transformer_fused's arithmetic, the same bits as `rms_norm_rope`),
stores q, and writes the rotated k and the v columns straight into the caches: one launch per layer where
`rms_norm_rope` twice and `write_kv` once made three.
"""

import torch
import triton
import triton.language as tl
from omni.kernels.programmatic_launch import launch_options, wait_for_prior_kernels
from omni.kernels.transformer_fused import _store_norm_rope, stored_as

from omni.fp8 import FP8_DTYPE


@triton.jit
def _token_cache_row(slots_ptr, positions_ptr, T, pos_stride_b, pos_stride_t, cache_stride_s, cache_stride_l):
    """This program's token (row b, position t of a [B, T] forward) and the offset of its (slot, position) row in a
    layer's cache: the one place both kernels map a token to where its K and V go."""
    token = tl.program_id(0).to(tl.int64)
    b = token // T
    t = token % T
    slot = tl.load(slots_ptr + b).to(tl.int64)
    position = tl.load(positions_ptr + b * pos_stride_b + t * pos_stride_t).to(tl.int64)
    return token, b, t, slot * cache_stride_s + position * cache_stride_l


@triton.jit
def _write_kv_kernel(
    k_ptr,
    v_ptr,
    k_cache_ptr,
    v_cache_ptr,
    slots_ptr,
    positions_ptr,
    T,
    k_stride_b,
    k_stride_t,
    v_stride_b,
    v_stride_t,
    pos_stride_b,
    pos_stride_t,
    cache_stride_s,
    cache_stride_l,
    N: tl.constexpr,
    BLOCK: tl.constexpr,
    PDL: tl.constexpr,
):
    wait_for_prior_kernels(PDL)
    _, b, t, row = _token_cache_row(
        slots_ptr, positions_ptr, T, pos_stride_b, pos_stride_t, cache_stride_s, cache_stride_l
    )
    offs = tl.arange(0, BLOCK)
    inside = offs < N
    dst = row + offs
    k = tl.load(k_ptr + b * k_stride_b + t * k_stride_t + offs, mask=inside)
    tl.store(k_cache_ptr + dst, stored_as(k, k_cache_ptr), mask=inside)
    v = tl.load(v_ptr + b * v_stride_b + t * v_stride_t + offs, mask=inside)
    tl.store(v_cache_ptr + dst, stored_as(v, v_cache_ptr), mask=inside)


def check_slots_positions(slots: torch.Tensor, positions: torch.Tensor, b: int, t: int, of: str) -> None:
    """slots [B] and positions [B, T] of a forward's tokens (`of`: what gave B and T, for the error)."""
    if tuple(slots.shape) != (b,) or tuple(positions.shape) != (b, t):
        raise ValueError(f"slots {tuple(slots.shape)} / positions {tuple(positions.shape)} do not match {of}'s [B, T]")


def check_cache_dtypes(dtype: torch.dtype, k_cache: torch.Tensor, v_cache: torch.Tensor, of: str) -> None:
    """Caches that hold values of `dtype`: both of that dtype, or both fp8 (an fp8 K/V cache; stores convert)."""
    if v_cache.dtype != k_cache.dtype or k_cache.dtype not in (dtype, FP8_DTYPE):
        raise ValueError(f"{of}: caches of {k_cache.dtype}/{v_cache.dtype} cannot hold {dtype} values (the same "
                         f"dtype or {FP8_DTYPE})")  # fmt: skip


def check_qkv_caches(qkv: torch.Tensor, heads: int, k_cache: torch.Tensor, v_cache: torch.Tensor, of: str) -> None:
    """What a fused attention's kernels read and write (`of`: the caller, for the error): qkv [B, T, (heads + 2
    kv_heads) * D] with its last dim contiguous, of the caches' dtype (or they fp8); caches [S, L, kv_heads, D]
    contiguous, D even."""
    kv_heads, dim = k_cache.shape[2:]
    if qkv.shape[-1] != (heads + 2 * kv_heads) * dim or v_cache.shape != k_cache.shape or dim % 2:
        raise ValueError(f"qkv {tuple(qkv.shape)} does not hold {heads} q and 2 x {kv_heads} kv heads of {dim}")
    check_cache_dtypes(qkv.dtype, k_cache, v_cache, of)
    if qkv.stride(-1) != 1 or not all(x.is_contiguous() for x in (k_cache, v_cache)):
        raise ValueError(f"{of} needs qkv's last dim and the caches contiguous")


def _token_contiguous(x: torch.Tensor) -> bool:
    """[..., heads, dim] with each token's heads × dim one contiguous run."""
    return x.stride(-1) == 1 and x.stride(-2) == x.shape[-1]


def write_kv(
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    slots: torch.Tensor,
    positions: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
) -> None:
    """k_cache[slots[b], positions[b, t]] = k[b, t] and the same for v. Caches [S, L, kv_heads, D] (one layer's),
    k, v [B, T, kv_heads, D] in the caches' dtype (fp8 caches: converted as `to_fp8`), slots [B], positions [B, T]."""
    b, t, heads, dim = k.shape
    if v.shape != k.shape or k_cache.shape[2:] != (heads, dim) or v_cache.shape != k_cache.shape:
        raise ValueError(f"k {tuple(k.shape)}, v {tuple(v.shape)} do not fit caches {tuple(k_cache.shape)}")
    if v.dtype != k.dtype:
        raise ValueError(f"k/v dtypes {k.dtype}/{v.dtype} differ")
    check_cache_dtypes(k.dtype, k_cache, v_cache, "write_kv")
    if not all(_token_contiguous(x) for x in (k, v)) or not all(x.is_contiguous() for x in (k_cache, v_cache)):
        raise ValueError("write_kv needs each token's heads x dim contiguous in k and v, and contiguous caches")
    check_slots_positions(slots, positions, b, t, "k")
    n = heads * dim
    _write_kv_kernel[(b * t,)](
        k,
        v,
        k_cache,
        v_cache,
        slots,
        positions,
        t,
        k.stride(0),
        k.stride(1),
        v.stride(0),
        v.stride(1),
        positions.stride(0),
        positions.stride(1),
        k_cache.stride(0),
        k_cache.stride(1),
        N=n,
        BLOCK=triton.next_power_of_2(n),
        **launch_options(),
    )


# The warps norm_rope_write_kv launches with (Triton's default, not passed): decode_attention's norm_rope_attention
# runs `_norm_rope_write_token` with as many, so the norms' sums reduce in the same order (the same bits).
NORM_ROPE_WARPS = 4


@triton.jit
def _norm_rope_write_token(
    row,
    qw_ptr,
    kw_ptr,
    cos_row,
    sin_row,
    q_out,
    k_cache_ptr,
    v_cache_ptr,
    dst,
    q_eps,
    k_eps,
    HEADS: tl.constexpr,
    KV_HEADS: tl.constexpr,
    HALF: tl.constexpr,
    HEADS_PAD: tl.constexpr,
    KV_HEADS_PAD: tl.constexpr,
    HALF_PAD: tl.constexpr,
    V_BLOCK: tl.constexpr,
):
    """One token's q, normed and rotated, to q_out, and its k (normed, rotated) and v into the caches at offset dst:
    this kernel's work, in one place for decode_attention's norm_rope_attention too."""
    nq = HEADS * 2 * HALF
    nk = KV_HEADS * 2 * HALF
    _store_norm_rope(row, qw_ptr, cos_row, sin_row, q_out, HEADS, q_eps, HALF, HEADS_PAD, HALF_PAD, True)
    _store_norm_rope(
        row + nq, kw_ptr, cos_row, sin_row, k_cache_ptr + dst, KV_HEADS, k_eps, HALF, KV_HEADS_PAD, HALF_PAD, True
    )
    offs = tl.arange(0, V_BLOCK)
    inside = offs < nk
    v = tl.load(row + nq + nk + offs, mask=inside)
    tl.store(v_cache_ptr + dst + offs, stored_as(v, v_cache_ptr), mask=inside)


@triton.jit
def _norm_rope_write_kernel(
    qkv_ptr,
    qw_ptr,
    kw_ptr,
    cos_ptr,
    sin_ptr,
    q_ptr,
    k_cache_ptr,
    v_cache_ptr,
    slots_ptr,
    positions_ptr,
    T,
    qkv_stride,
    rope_stride,
    pos_stride_b,
    pos_stride_t,
    cache_stride_s,
    cache_stride_l,
    q_eps,
    k_eps,
    HEADS: tl.constexpr,
    KV_HEADS: tl.constexpr,
    HALF: tl.constexpr,
    HEADS_PAD: tl.constexpr,
    KV_HEADS_PAD: tl.constexpr,
    HALF_PAD: tl.constexpr,
    V_BLOCK: tl.constexpr,
    PDL: tl.constexpr,
):
    # One program per (row, position): q, then k and v into the caches.
    wait_for_prior_kernels(PDL)
    token, _, _, dst = _token_cache_row(
        slots_ptr, positions_ptr, T, pos_stride_b, pos_stride_t, cache_stride_s, cache_stride_l
    )
    row = qkv_ptr + token * qkv_stride
    cos_row, sin_row = cos_ptr + token * rope_stride, sin_ptr + token * rope_stride
    _norm_rope_write_token(row, qw_ptr, kw_ptr, cos_row, sin_row, q_ptr + token * (HEADS * 2 * HALF), k_cache_ptr,
                           v_cache_ptr, dst, q_eps, k_eps, HEADS, KV_HEADS, HALF, HEADS_PAD, KV_HEADS_PAD, HALF_PAD,
                           V_BLOCK)  # fmt: skip


def norm_rope_write_kv(
    qkv: torch.Tensor,
    heads: int,
    q_norm: tuple[torch.Tensor, float],
    k_norm: tuple[torch.Tensor, float],
    cos: torch.Tensor,
    sin: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    slots: torch.Tensor,
    positions: torch.Tensor,
) -> torch.Tensor:
    """A fused attention's inputs in one kernel. qkv [B, T, (heads + 2 kv_heads) * D] (q | k | v columns, rows
    contiguous), q_norm/k_norm (weight [D], eps), cos/sin [B, T, 1, D]; caches [S, L, kv_heads, D] (one layer's),
    slots [B], positions [B, T]. Writes RoPE(norm(k)) and v at (slots[b], positions[b, t]) and returns
    RoPE(norm(q)) [B, T, heads, D]: the same bits as `rms_norm_rope` on each part and `write_kv`."""
    b, t, width = qkv.shape
    check_qkv_caches(qkv, heads, k_cache, v_cache, "norm_rope_write_kv")
    check_slots_positions(slots, positions, b, t, "qkv")
    kv_heads, dim = k_cache.shape[2:]
    rows = qkv.reshape(b * t, width)  # a view where the rows are one stride apart (a GEMM's output is)
    cos2, sin2 = cos.reshape(b * t, dim), sin.reshape(b * t, dim)
    q = torch.empty(b, t, heads, dim, dtype=qkv.dtype, device=qkv.device)
    _norm_rope_write_kernel[(b * t,)](
        rows,
        q_norm[0],
        k_norm[0],
        cos2,
        sin2,
        q,
        k_cache,
        v_cache,
        slots,
        positions,
        t,
        rows.stride(0),
        cos2.stride(0),
        positions.stride(0),
        positions.stride(1),
        k_cache.stride(0),
        k_cache.stride(1),
        q_norm[1],
        k_norm[1],
        HEADS=heads,
        KV_HEADS=kv_heads,
        HALF=dim // 2,
        HEADS_PAD=triton.next_power_of_2(heads),
        KV_HEADS_PAD=triton.next_power_of_2(kv_heads),
        HALF_PAD=triton.next_power_of_2(dim // 2),
        V_BLOCK=triton.next_power_of_2(kv_heads * dim),
        **launch_options(),
    )
    return q
