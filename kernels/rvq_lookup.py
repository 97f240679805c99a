"""The codec's residual-VQ decode as one lookup-and-sum kernel over precomputed divided codebooks.

`ResidualVQ.forward` turns codes into vectors one codebook at a time: clamp the usage counts, index them by the codes,
look the codes up in `embedding_sum`, divide, add to the running total. Five small kernels per codebook, 16 codebooks:
~80 launches a codec step whatever its length, which count in a short graph-replayed step. The divided codebooks
(`embedding_sum / usage`) do not depend on the codes, so `ResidualVQ.divided_codebooks` computes them once; this
kernel then reads each token's rows and adds them in the same order, rounding to the tables' dtype after every add
as PyTorch's element-wise add does, so the total keeps the same bits. One launch per RVQ group instead of ~5 per
codebook.
"""

import torch
import triton
import triton.language as tl

# The rounding after each add, by the tables' dtype (the kernel's ROUND_TO).
ROUNDING = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}


@triton.jit
def round_to(total, ROUND_TO: tl.constexpr):
    """An fp32 value rounded to nearest even in bf16 (1) or fp16 (2), kept in fp32; fp32 (0) as it is: what
    PyTorch's 16-bit add does to its fp32 result. Also kernels/frame_embedding.py's."""
    if ROUND_TO == 1:  # on the bits: the Triton interpreter's fp32 -> bf16 cast truncates
        bits = total.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        total = bits.to(tl.float32, bitcast=True)
    elif ROUND_TO == 2:
        total = total.to(tl.float16).to(tl.float32)
    return total


@triton.jit
def _lookup_sum_kernel(
    tables_ptr,
    codes_ptr,
    out_ptr,
    tokens,
    books,
    tokens_per_batch,
    codes_stride_b,
    codes_stride_t,
    codes_stride_n,
    table_stride_n,
    DIM: tl.constexpr,
    DIM_PAD: tl.constexpr,
    BLOCK_T: tl.constexpr,
    ROUND_TO: tl.constexpr,
):
    tok = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T).to(tl.int64)
    d = tl.arange(0, DIM_PAD)
    inside = tok < tokens
    mask = inside[:, None] & (d < DIM)[None, :]
    code_at = codes_ptr + (tok // tokens_per_batch) * codes_stride_b + (tok % tokens_per_batch) * codes_stride_t
    # The running total in fp32, holding values of the tables' dtype: after each add it is rounded to that dtype,
    # to nearest even, as PyTorch's 16-bit add (computed in fp32, then rounded) does.
    total = tl.zeros([BLOCK_T, DIM_PAD], dtype=tl.float32)
    for book in range(books):
        code = tl.load(code_at + book * codes_stride_n, mask=inside, other=0).to(tl.int64)
        row = tl.load(tables_ptr + book * table_stride_n + code[:, None] * DIM + d[None, :], mask=mask, other=0.0)
        total = round_to(total + row.to(tl.float32), ROUND_TO)
    # exact: the total is a value of the output's dtype
    tl.store(out_ptr + tok[:, None] * DIM + d[None, :], total.to(out_ptr.dtype.element_ty), mask=mask)


def lookup_sum(tables: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """out[b, t] = sum over i, in order, of tables[i, codes[b, t, i]]: tables [n, size, dim] contiguous, codes
    [B, T, n] integer (any strides, on the tables' device; values within [0, size), not checked here: that would
    sync) -> out [B, T, dim] contiguous, in the tables' dtype."""
    if tables.dtype not in ROUNDING:
        raise ValueError(f"lookup_sum: tables must be fp32, bf16 or fp16, got {tables.dtype}")
    if tables.dim() != 3 or not tables.is_contiguous():
        raise ValueError(f"lookup_sum: tables must be a contiguous [n, size, dim] tensor, got {tuple(tables.shape)}")
    if codes.dim() != 3 or codes.shape[2] != tables.shape[0] or codes.dtype not in (torch.int32, torch.int64):
        raise ValueError(
            f"lookup_sum: codes must be an integer [B, T, {tables.shape[0]}] tensor, got {codes.dtype} "
            f"{tuple(codes.shape)}"
        )
    batch, frames, books = codes.shape
    dim = tables.shape[2]
    out = torch.empty(batch, frames, dim, dtype=tables.dtype, device=tables.device)
    tokens = batch * frames
    if tokens == 0:
        return out
    dim_pad = triton.next_power_of_2(dim)
    block_t = max(1, min(16, 4096 // dim_pad, triton.next_power_of_2(tokens)))
    _lookup_sum_kernel[(triton.cdiv(tokens, block_t),)](
        tables,
        codes,
        out,
        tokens,
        books,
        frames,
        codes.stride(0),
        codes.stride(1),
        codes.stride(2),
        tables.stride(0),
        DIM=dim,
        DIM_PAD=dim_pad,
        BLOCK_T=block_t,
        ROUND_TO=ROUNDING[tables.dtype],
    )
    return out
