"""Decode attention over a slot cache: one query position per slot, keys read in place up to the slot's length.

The PyTorch path gathers every slot's K/V up to the cache length (`cache.k[layer, slots, :max_len]`, a copy) and
masks the dead positions, so a decode step reads and writes the whole `max_len` cache of every slot in the batch
whatever the live length: at 256 slots × 2048 positions that is ~2 GB per layer for the 1.7B talker. This kernel
reads K/V straight from the cache rows of `slots` and stops at each slot's length (a device tensor, so the loop
bound needs no host sync and the kernel can be captured in a CUDA graph).

One program per (row, kv head) handles the whole GQA group of query heads that share the kv head, with an online
softmax over blocks of keys, accumulating in fp32 (the only roundings are the inputs' and the final store).

`norm_rope_attention` is one kernel for a one-position pass from its QKV GEMM's output: each (row, kv head) program
runs its row's whole kv_write.norm_rope_write_kv (`_norm_rope_write_token`: the queries' and keys' norms and RoPE,
the keys and values written into the cache; every program of the row writes the same values), waits at a CTA barrier,
then attends. One kernel where there were two. It needs one position a row: a program reads only keys it wrote itself
or earlier kernels did, while in a T-position pass a row's keys would come from programs running at the same time.
The same bits needs the same order of sums, which the interpreter does not show (it sums in one order):
- run 202 (an H100), a first version that normed only its kv head's share ([2, 64] and [1, 64] tiles against the norm
  kernel's [16, 64] and [8, 64]): a tenth of the fp32 keys a rounding apart, 71 of 131,072 bf16 outputs;
- run 203, this version with the norm kernel's code and warps (NORM_ROPE_WARPS): at the backbone's launch keys, values
  and outputs equal in bf16 and fp32; at the code predictor's (whose attention launches with 1 warp, the norms with 4)
  a fifth of the fp32 outputs a rounding apart. So the runner asks for it on the talker's cache only;
- runs 206-207 (H100), the step with it on the talker's cache against the two kernels, at a cache past SHORT_CACHE
  (the service's launch): codes, caches, hidden state and slot state equal in bf16 and in fp32. (Run 205's check, at a
  34-position cache, took the 1-warp launch there too and was not equal.)
Neither version passed its A/B (one process, 1.7B, H100): the first (run 201) took 2.0-3.3% off the step at 16-128
rows but added 0.35-0.64% at 1 row; this one (run 205) took 0.6-0.9% off at 16 and 32 rows but added 0.9-1.0% at 1
row, 0.4-0.5% at 128 and 4.2-4.3% at 512 (each of a row's 8 programs runs the row's norms). The talker setting is off.
"""

import math

import torch
import triton
import triton.language as tl
from omni.kernels import INTERPRETED
from omni.kernels.kv_write import (
    NORM_ROPE_WARPS,
    _norm_rope_write_token,
    check_cache_dtypes,
    check_qkv_caches,
    check_slots_positions,
)
from omni.kernels.programmatic_launch import launch_options, wait_for_prior_kernels


def decode_attention_reference(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, slots: torch.Tensor, lengths: torch.Tensor
) -> torch.Tensor:
    """The definition: q [B, H, D]; caches [S, L, KVH, D]; row b attends to keys 0..lengths[b]-1 of slots[b]."""
    b, heads, dim = q.shape
    kv_heads = k_cache.shape[2]
    keys = k_cache[slots].float().repeat_interleave(heads // kv_heads, dim=2)  # [B, L, H, D]
    values = v_cache[slots].float().repeat_interleave(heads // kv_heads, dim=2)
    scores = torch.einsum("bhd,blhd->bhl", q.float(), keys) / math.sqrt(dim)
    dead = torch.arange(k_cache.shape[1], device=q.device)[None, :] >= lengths[:, None]  # [B, L]
    scores = scores.masked_fill(dead[:, None, :], -float("inf"))
    return torch.einsum("bhl,blhd->bhd", scores.softmax(dim=-1), values).to(q.dtype)


@triton.jit
def _attend(
    q_ptr,
    k_ptr,
    v_ptr,
    out_ptr,
    row,
    kv_head,
    slot,
    length,
    scale,
    q_stride_b,
    q_stride_h,
    cache_stride_s,
    cache_stride_l,
    cache_stride_h,
    out_stride_b,
    out_stride_h,
    GROUP: tl.constexpr,
    GROUP_PAD: tl.constexpr,
    DIM: tl.constexpr,
    DIM_PAD: tl.constexpr,
    BLOCK_N: tl.constexpr,
    PRECISION: tl.constexpr,
    DOT_FP32: tl.constexpr,
):
    """Row `row`'s GROUP query heads of `kv_head` over keys 0..length-1 of `slot`, stored to out: the one copy of the
    attention's arithmetic, for both kernels."""
    g = tl.arange(0, GROUP_PAD)  # the query heads of this kv head (rows past GROUP are padding for tl.dot)
    d = tl.arange(0, DIM_PAD)  # head dims past DIM are padding (zeros) for power-of-two blocks
    head = kv_head * GROUP + g
    q_mask = (g < GROUP)[:, None] & (d < DIM)[None, :]
    q = tl.load(q_ptr + row * q_stride_b + head[:, None] * q_stride_h + d[None, :], mask=q_mask, other=0.0)

    if DOT_FP32:
        q = q.to(tl.float32)
    base = slot * cache_stride_s + kv_head * cache_stride_h
    m = tl.full((GROUP_PAD,), -float("inf"), dtype=tl.float32)
    denom = tl.zeros((GROUP_PAD,), dtype=tl.float32)
    acc = tl.zeros((GROUP_PAD, DIM_PAD), dtype=tl.float32)
    for start in range(0, length, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        live = n < length
        offs = base + n[:, None].to(tl.int64) * cache_stride_l + d[None, :]
        kv_mask = live[:, None] & (d < DIM)[None, :]
        k = tl.load(k_ptr + offs, mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + offs, mask=kv_mask, other=0.0)
        if k_ptr.dtype.element_ty == tl.float8e4nv:  # an fp8 cache: exact upcast to q's dtype, then as any cache
            k = k.to(q_ptr.dtype.element_ty)
            v = v.to(q_ptr.dtype.element_ty)
        if DOT_FP32:  # exact upcast: the same products, accumulated in fp32 as the tensor cores do
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale  # [GROUP_PAD, BLOCK_N], fp32 accumulate
        s = tl.where(live[None, :], s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        correction = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        denom = denom * correction + tl.sum(p, axis=1)
        p = p.to(q_ptr.dtype.element_ty)  # probabilities rounded to the values' (upcast) dtype, as flash attention
        if DOT_FP32:
            p = p.to(tl.float32)
        acc = acc * correction[:, None] + tl.dot(p, v, input_precision=PRECISION)
        m = m_new
    out = acc / denom[:, None]
    tl.store(
        out_ptr + row * out_stride_b + head[:, None] * out_stride_h + d[None, :],
        out.to(out_ptr.dtype.element_ty),
        mask=q_mask,
    )


@triton.jit
def _decode_attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    out_ptr,
    slots_ptr,
    lengths_ptr,
    scale,
    q_stride_b,
    q_stride_h,
    cache_stride_s,
    cache_stride_l,
    cache_stride_h,
    out_stride_b,
    out_stride_h,
    GROUP: tl.constexpr,
    GROUP_PAD: tl.constexpr,
    DIM: tl.constexpr,
    DIM_PAD: tl.constexpr,
    BLOCK_N: tl.constexpr,
    PRECISION: tl.constexpr,
    DOT_FP32: tl.constexpr,
    ROWS_PER_SLOT: tl.constexpr,
    PDL: tl.constexpr,
):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0)
    kv_head = tl.program_id(1)
    slot = tl.load(slots_ptr + row // ROWS_PER_SLOT).to(tl.int64)
    length = tl.load(lengths_ptr + row).to(tl.int32)
    _attend(q_ptr, k_ptr, v_ptr, out_ptr, row, kv_head, slot, length, scale, q_stride_b, q_stride_h, cache_stride_s,
            cache_stride_l, cache_stride_h, out_stride_b, out_stride_h, GROUP, GROUP_PAD, DIM, DIM_PAD, BLOCK_N,
            PRECISION, DOT_FP32)  # fmt: skip


@triton.jit
def _norm_rope_attention_kernel(
    qkv_ptr,
    qw_ptr,
    kw_ptr,
    cos_ptr,
    sin_ptr,
    q_ptr,
    k_ptr,
    v_ptr,
    out_ptr,
    slots_ptr,
    positions_ptr,
    lengths_ptr,
    scale,
    q_eps,
    k_eps,
    qkv_stride,
    rope_stride,
    pos_stride,
    cache_stride_s,
    cache_stride_l,
    cache_stride_h,
    HEADS: tl.constexpr,
    KV_HEADS: tl.constexpr,
    HALF: tl.constexpr,
    HEADS_PAD: tl.constexpr,
    KV_HEADS_PAD: tl.constexpr,
    HALF_PAD: tl.constexpr,
    V_BLOCK: tl.constexpr,
    GROUP: tl.constexpr,
    GROUP_PAD: tl.constexpr,
    DIM_PAD: tl.constexpr,
    BLOCK_N: tl.constexpr,
    PRECISION: tl.constexpr,
    DOT_FP32: tl.constexpr,
    PDL: tl.constexpr,
):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0)
    kv_head = tl.program_id(1)
    token = row.to(tl.int64)
    slot = tl.load(slots_ptr + row).to(tl.int64)
    position = tl.load(positions_ptr + token * pos_stride).to(tl.int64)
    length = tl.load(lengths_ptr + row).to(tl.int32)
    x = qkv_ptr + token * qkv_stride
    cos_row, sin_row = cos_ptr + token * rope_stride, sin_ptr + token * rope_stride
    dim: tl.constexpr = 2 * HALF
    q_row = q_ptr + token * (HEADS * dim)
    dst = slot * cache_stride_s + position * cache_stride_l
    # The row's whole norm_rope_write_kv, by each of its programs (each writes the same values): so the keys a program
    # reads come from no other program running with it, and with that kernel's code and warps its norms' sums reduce
    # in its order (the same bits).
    _norm_rope_write_token(x, qw_ptr, kw_ptr, cos_row, sin_row, q_row, k_ptr, v_ptr, dst, q_eps, k_eps, HEADS,
                           KV_HEADS, HALF, HEADS_PAD, KV_HEADS_PAD, HALF_PAD, V_BLOCK)  # fmt: skip
    tl.debug_barrier()  # a CTA barrier: the stores above are seen by every thread's loads below
    _attend(q_ptr, k_ptr, v_ptr, out_ptr, row, kv_head, slot, length, scale, HEADS * dim, dim, cache_stride_s,
            cache_stride_l, cache_stride_h, HEADS * dim, dim, GROUP, GROUP_PAD, dim, DIM_PAD, BLOCK_N, PRECISION,
            DOT_FP32)  # fmt: skip


# Launch settings (keys per block, warps, pipeline stages), by cache length: tools/bench_decode_attention.py sweeps
# them at the talker's shapes. Long caches are the backbone's (max_context positions), short ones the code
# predictor's 16, where a program has at most one block of keys and the launch shape is most of its time.
LAUNCH = {"block_n": 64, "num_warps": 4, "num_stages": 3}
LAUNCH_SHORT = {"block_n": 16, "num_warps": 1, "num_stages": 2}
SHORT_CACHE = 64  # cache lengths up to this take LAUNCH_SHORT


def _launch_for(k_cache: torch.Tensor, launch: dict | None) -> dict:
    """The launch settings for a cache of k_cache's length, with `launch`'s overrides."""
    return {**(LAUNCH_SHORT if k_cache.shape[1] <= SHORT_CACHE else LAUNCH), **(launch or {})}


def _check_groups(heads: int, kv_heads: int) -> None:
    if heads % kv_heads:
        raise ValueError(f"{heads} query heads are not a multiple of {kv_heads} kv heads")


def decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    slots: torch.Tensor,
    lengths: torch.Tensor,
    launch: dict | None = None,
    rows_per_slot: int = 1,
) -> torch.Tensor:
    """Attention of one query per row, q [B, H, D], over keys 0..lengths[b]-1 of cache slot slots[b // rows_per_slot].

    `rows_per_slot` T: the rows are T positions of each slot in turn (slots [B / T]), as a T-position forward's
    (the code predictor's first pass, short prefills) lays them out. k_cache, v_cache: [S, L, KVH, D] with the last
    dim contiguous (one layer of `KVCache`), of q's dtype or fp8 (read as q's dtype: an exact upcast). Every length
    must be in 1..L (a zero length would divide by zero; callers always attend at least to the query's own key).
    Returns [B, H, D] in q's dtype. `launch` overrides the settings for the cache's length.
    """
    launch = _launch_for(k_cache, launch)
    b, heads, dim = q.shape
    kv_heads = k_cache.shape[2]
    _check_groups(heads, kv_heads)
    if k_cache.stride(-1) != 1 or v_cache.stride() != k_cache.stride() or q.stride(-1) != 1:
        raise ValueError("q and the caches need a contiguous last dim, and k/v caches the same strides")
    check_cache_dtypes(q.dtype, k_cache, v_cache, "decode_attention")
    if slots.dim() != 1 or rows_per_slot < 1 or slots.shape[0] * rows_per_slot != b:
        raise ValueError(f"{b} rows need [{b} / rows_per_slot] slots, got {tuple(slots.shape)} and {rows_per_slot}")
    group = heads // kv_heads
    out = torch.empty_like(q)
    _decode_attention_kernel[(b, kv_heads)](
        q,
        k_cache,
        v_cache,
        out,
        slots,
        lengths,
        1.0 / math.sqrt(dim),
        q.stride(0),
        q.stride(1),
        k_cache.stride(0),
        k_cache.stride(1),
        k_cache.stride(2),
        out.stride(0),
        out.stride(1),
        GROUP=group,
        GROUP_PAD=max(16, triton.next_power_of_2(group)),
        DIM=dim,
        DIM_PAD=max(16, triton.next_power_of_2(dim)),
        BLOCK_N=launch["block_n"],
        PRECISION="ieee",  # fp32 inputs stay fp32 (no TF32 rounding); bf16/fp16 inputs are exact products anyway
        # The Triton interpreter (CPU tests) computes tl.dot of bf16 on raw bits; upcasting first is exact.
        DOT_FP32=INTERPRETED and q.dtype != torch.float32,
        ROWS_PER_SLOT=rows_per_slot,
        num_warps=launch["num_warps"],
        num_stages=launch["num_stages"],
        **launch_options(),
    )
    return out


def norm_rope_attention(
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
    lengths: torch.Tensor,
    launch: dict | None = None,
) -> torch.Tensor:
    """A one-position pass's attention from its QKV GEMM's output, in one kernel: what
    `kv_write.norm_rope_write_kv(qkv, heads, q_norm, k_norm, cos, sin, k_cache, v_cache, slots, positions)` then
    `decode_attention` of its q over keys 0..lengths[b]-1 of slots[b] give, with the K/V written into the caches, by
    the same code: the same bits where the attention's launch has NORM_ROPE_WARPS warps (the module's note).
    qkv [B, 1, (heads + 2 kv_heads) * D] (q | k | v columns, rows contiguous), q_norm/k_norm (weight [D], eps),
    cos/sin [B, 1, 1, D]; caches [S, L, kv_heads, D] (one layer's, contiguous), slots [B], positions [B, 1], lengths
    [B] (each in 1..L). Returns [B, heads, D]. `launch` overrides the keys per block and stages for the cache's
    length; the warps are always NORM_ROPE_WARPS."""
    b, t, width = qkv.shape
    kv_heads, dim = k_cache.shape[2:]
    if t != 1:
        raise ValueError(f"norm_rope_attention takes one position a row, got {t}: a row's keys would come from "
                         "programs running at the same time")  # fmt: skip
    check_qkv_caches(qkv, heads, k_cache, v_cache, "norm_rope_attention")
    _check_groups(heads, kv_heads)
    check_slots_positions(slots, positions, b, t, "qkv")
    if tuple(lengths.shape) != (b,):
        raise ValueError(f"lengths {tuple(lengths.shape)} do not match qkv's {b} rows")
    launch = _launch_for(k_cache, launch)
    group = heads // kv_heads
    rows = qkv.reshape(b, width)  # a view where the rows are one stride apart (a GEMM's output is)
    cos2, sin2 = cos.reshape(b, dim), sin.reshape(b, dim)
    q = torch.empty(b, heads, dim, dtype=qkv.dtype, device=qkv.device)  # the normed, rotated queries
    out = torch.empty_like(q)
    _norm_rope_attention_kernel[(b, kv_heads)](
        rows,
        q_norm[0],
        k_norm[0],
        cos2,
        sin2,
        q,
        k_cache,
        v_cache,
        out,
        slots,
        positions,
        lengths,
        1.0 / math.sqrt(dim),
        q_norm[1],
        k_norm[1],
        rows.stride(0),
        cos2.stride(0),
        positions.stride(0),
        k_cache.stride(0),
        k_cache.stride(1),
        k_cache.stride(2),
        HEADS=heads,
        KV_HEADS=kv_heads,
        HALF=dim // 2,
        HEADS_PAD=triton.next_power_of_2(heads),
        KV_HEADS_PAD=triton.next_power_of_2(kv_heads),
        HALF_PAD=triton.next_power_of_2(dim // 2),
        V_BLOCK=triton.next_power_of_2(kv_heads * dim),
        GROUP=group,
        GROUP_PAD=max(16, triton.next_power_of_2(group)),
        DIM_PAD=max(16, triton.next_power_of_2(dim)),
        BLOCK_N=launch["block_n"],
        PRECISION="ieee",
        DOT_FP32=INTERPRETED and qkv.dtype != torch.float32,
        num_warps=NORM_ROPE_WARPS,  # norm_rope_write_kv's, whatever the attention's launch: its sums' order
        num_stages=launch["num_stages"],
        **launch_options(),
    )
    return out
