"""Decode attention over a slot cache: one query position per slot, keys read in place up to the slot's length.

The PyTorch path gathers every slot's K/V up to the cache length (`cache.k[layer, slots, :max_len]`, a copy) and
masks the dead positions, so a decode step reads and writes the whole `max_len` cache of every slot in the batch
whatever the live length: at 256 slots × 2048 positions that is ~2 GB per layer for the 1.7B talker. This kernel
reads K/V straight from the cache rows of `slots` and stops at each slot's length (a device tensor, so the loop
bound needs no host sync and the kernel can be captured in a CUDA graph).

One program per (row, kv head) handles the whole GQA group of query heads that share the kv head, with an online
softmax over blocks of keys, accumulating in fp32 (the only roundings are the inputs' and the final store).
"""

import math

import torch
import triton
import triton.language as tl
from omni.kernels import INTERPRETED
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
        if DOT_FP32:  # exact upcast: the same products, accumulated in fp32 as the tensor cores do
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale  # [GROUP_PAD, BLOCK_N], fp32 accumulate
        s = tl.where(live[None, :], s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        correction = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        denom = denom * correction + tl.sum(p, axis=1)
        p = p.to(v_ptr.dtype.element_ty)  # probabilities rounded to the value dtype, as flash attention does
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


# Launch settings (keys per block, warps, pipeline stages), by cache length: tools/bench_decode_attention.py sweeps
# them at the talker's shapes. Long caches are the backbone's (max_context positions), short ones the code
# predictor's 16, where a program has at most one block of keys and the launch shape is most of its time.
LAUNCH = {"block_n": 64, "num_warps": 4, "num_stages": 3}
LAUNCH_SHORT = {"block_n": 16, "num_warps": 1, "num_stages": 2}
SHORT_CACHE = 64  # cache lengths up to this take LAUNCH_SHORT


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
    dim contiguous (one layer of `KVCache`). Every length must be in 1..L (a zero length would divide by zero; callers
    always attend at least to the query's own key). Returns [B, H, D] in q's dtype. `launch` overrides the settings
    for the cache's length.
    """
    launch = {**(LAUNCH_SHORT if k_cache.shape[1] <= SHORT_CACHE else LAUNCH), **(launch or {})}
    b, heads, dim = q.shape
    kv_heads = k_cache.shape[2]
    if heads % kv_heads:
        raise ValueError(f"{heads} query heads are not a multiple of {kv_heads} kv heads")
    if k_cache.stride(-1) != 1 or v_cache.stride() != k_cache.stride() or q.stride(-1) != 1:
        raise ValueError("q and the caches need a contiguous last dim, and k/v caches the same strides")
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
