"""The codec transformer's sliding-window attention of one step in one small kernel.

A codec step attends each row's T new queries (2 to 25 frames in the service) to its [past window ‖ new] keys
(~73-96 of them), causal within `window` positions, past entries of a fresh stream (position -1) left out. Through
SDPA that is a [B, 1, T, W+T] boolean mask read by cuDNN's flash kernel, whose tiles are sized for long sequences:
0.87 ms over the 8 layers of a 128-row 2-frame step (run 91's profile, 11.7% of its CUDA time) for ~38 MB of keys
and values a layer. Here one program per (row, head, block of 16 queries) computes the mask from the positions as it
goes, with an online softmax over blocks of keys accumulating in fp32, and writes [B, T, H, D], the layout the output
projection reads (no transpose copy). Not bitwise against SDPA: the sums run in another order.
"""

import math

import torch
import triton
import triton.language as tl
from omni.kernels import INTERPRETED


@triton.jit
def _window_attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    qpos_ptr,
    kpos_ptr,
    out_ptr,
    queries,
    length,
    window,
    scale,
    q_stride_b,
    q_stride_h,
    q_stride_t,
    kv_stride_b,
    kv_stride_h,
    kv_stride_l,
    qpos_stride_b,
    kpos_stride_b,
    out_stride_b,
    out_stride_t,
    out_stride_h,
    GROUP: tl.constexpr,
    DIM: tl.constexpr,
    DIM_PAD: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_L: tl.constexpr,
    DOT_FP32: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    t = tl.program_id(2) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.arange(0, DIM_PAD)
    live_t = t < queries
    q_mask = live_t[:, None] & (d < DIM)[None, :]
    q = tl.load(q_ptr + row * q_stride_b + head * q_stride_h + t[:, None] * q_stride_t + d[None, :], mask=q_mask)
    if DOT_FP32:
        q = q.to(tl.float32)
    qpos = tl.load(qpos_ptr + row * qpos_stride_b + t, mask=live_t, other=0)
    kv = k_ptr + row * kv_stride_b + (head // GROUP) * kv_stride_h
    vv = v_ptr + row * kv_stride_b + (head // GROUP) * kv_stride_h
    m = tl.full((BLOCK_T,), -float("inf"), dtype=tl.float32)
    denom = tl.zeros((BLOCK_T,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_T, DIM_PAD), dtype=tl.float32)
    for start in range(0, length, BLOCK_L):
        n = start + tl.arange(0, BLOCK_L)
        live_n = n < length
        kv_mask = live_n[:, None] & (d < DIM)[None, :]
        k = tl.load(kv + n[:, None] * kv_stride_l + d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(vv + n[:, None] * kv_stride_l + d[None, :], mask=kv_mask, other=0.0)
        if DOT_FP32:  # the interpreter's tl.dot of bf16 reads raw bits; the upcast is exact
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        kpos = tl.load(kpos_ptr + row * kpos_stride_b + n, mask=live_n, other=-1)
        diff = qpos[:, None] - kpos[None, :]
        seen = (diff >= 0) & (diff <= window) & (kpos >= 0)[None, :]
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
        s = tl.where(seen, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        # A block where a query sees nothing yet keeps m at -inf: shift by 0 there instead of by -inf (NaN).
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        correction = tl.exp(m - shift)
        p = tl.exp(s - shift[:, None])
        denom = denom * correction + tl.sum(p, axis=1)
        p = p.to(v_ptr.dtype.element_ty)  # probabilities rounded to the value dtype, as flash attention does
        if DOT_FP32:
            p = p.to(tl.float32)
        acc = acc * correction[:, None] + tl.dot(p, v, input_precision="ieee")
        m = m_new
    out = acc / tl.where(denom == 0.0, 1.0, denom)[:, None]  # 0 only in the padding queries past `queries`
    tl.store(
        out_ptr + row * out_stride_b + t[:, None] * out_stride_t + head * out_stride_h + d[None, :],
        out.to(out_ptr.dtype.element_ty),
        mask=q_mask,
    )


def window_attention(
    q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, qpos: torch.Tensor, kpos: torch.Tensor, window: int
) -> torch.Tensor:
    """The codec's `masked_attention` under `window_mask(qpos, kpos, window)` (omni/models/qwen3_tts/codec.py) in one
    kernel: q [B, H, T, D]; keys, values [B, KV, L, D] (H a multiple of KV; last dims contiguous, keys and values
    strided alike); qpos [B, T] and kpos [B, L] integer positions. Every query must see at least one key (in the
    codec each sees its own). Returns [B, T, H, D] in q's dtype."""
    b, heads, t, dim = q.shape
    kv_heads, length = keys.shape[1], keys.shape[2]
    if heads % kv_heads or keys.shape != values.shape or keys.shape[0] != b or keys.shape[3] != dim:
        raise ValueError(f"window_attention: q {tuple(q.shape)} against keys {tuple(keys.shape)}, values "
                         f"{tuple(values.shape)}")  # fmt: skip
    if q.stride(-1) != 1 or keys.stride(-1) != 1 or keys.stride() != values.stride():
        raise ValueError("window_attention: last dims must be contiguous, keys and values strided alike")
    if qpos.shape != (b, t) or kpos.shape != (b, length) or qpos.stride(1) != 1 or kpos.stride(1) != 1:
        raise ValueError(f"window_attention: qpos must be [{b}, {t}] and kpos [{b}, {length}], rows contiguous")
    out = torch.empty(b, t, heads, dim, dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out
    block_t = 16  # tl.dot's smallest tile; a 2-frame step pads its queries to it
    _window_attention_kernel[(b, heads, triton.cdiv(t, block_t))](
        q,
        keys,
        values,
        qpos,
        kpos,
        out,
        t,
        length,
        window,
        1.0 / math.sqrt(dim),
        q.stride(0),
        q.stride(1),
        q.stride(2),
        keys.stride(0),
        keys.stride(1),
        keys.stride(2),
        qpos.stride(0),
        kpos.stride(0),
        out.stride(0),
        out.stride(1),
        out.stride(2),
        GROUP=heads // kv_heads,
        DIM=dim,
        DIM_PAD=max(16, triton.next_power_of_2(dim)),
        BLOCK_T=block_t,
        BLOCK_L=64,
        DOT_FP32=INTERPRETED and q.dtype != torch.float32,
        num_warps=4,
    )
    return out
