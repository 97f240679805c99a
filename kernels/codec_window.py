"""The codec transformer's K/V windows copied between its streaming state and a step's buffers, rows indirected.

A codec step (`CodecDecoder.decode_streams`, `codec_graphs.codec_step`) keeps each stream's last `window` keys and
values of every layer in `CodecState.key/value` [layers, slots, kv_heads, window, head_dim]. The PyTorch path moves
them with an index gather of every layer's rows, a concatenation with the new keys per layer, a gather of each
row's new window (an int64 index read per element), a stack and an index put: five passes over ~19 MB per layer
and tensor at 128 rows, whatever the chunk length, so they weigh most in short chunks. With `copy_windows` a
layer's past window goes from the state's rows straight into the [past ‖ new] buffer, and its new window from that
buffer straight back into the state's rows: two passes. Copies, so the state and the outputs keep the same bits.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _copy_windows_kernel(
    src_ptr,
    dst_ptr,
    src_rows_ptr,
    src_start_ptr,
    dst_rows_ptr,
    length,
    src_stride_n,
    src_stride_h,
    src_stride_l,
    dst_stride_n,
    dst_stride_h,
    dst_stride_l,
    HAS_SRC_ROWS: tl.constexpr,
    HAS_SRC_START: tl.constexpr,
    HAS_DST_ROWS: tl.constexpr,
    DIM: tl.constexpr,
    DIM_PAD: tl.constexpr,
    BLOCK_L: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    src_row = b
    if HAS_SRC_ROWS:
        src_row = tl.load(src_rows_ptr + b).to(tl.int64)
    dst_row = b
    if HAS_DST_ROWS:
        dst_row = tl.load(dst_rows_ptr + b).to(tl.int64)
    start = 0
    if HAS_SRC_START:
        start = tl.load(src_start_ptr + b).to(tl.int64)
    d = tl.arange(0, DIM_PAD)
    src = src_ptr + src_row * src_stride_n + head * src_stride_h
    dst = dst_ptr + dst_row * dst_stride_n + head * dst_stride_h
    for first in range(0, length, BLOCK_L):
        w = first + tl.arange(0, BLOCK_L).to(tl.int64)
        inside = (w < length)[:, None] & (d < DIM)[None, :]
        x = tl.load(src + (start + w)[:, None] * src_stride_l + d[None, :], mask=inside)
        tl.store(dst + w[:, None] * dst_stride_l + d[None, :], x, mask=inside)


def copy_windows(
    src: torch.Tensor,
    dst: torch.Tensor,
    length: int,
    src_rows: torch.Tensor | None = None,
    src_start: torch.Tensor | None = None,
    dst_rows: torch.Tensor | None = None,
) -> None:
    """dst[dst_rows[b], h, w] = src[src_rows[b], h, src_start[b] + w] for every row b, head h and w < length.

    src [Ns, H, Ls, D] and dst [Nd, H, Ld, D] in one dtype with the last dim contiguous; src_rows, src_start and
    dst_rows [B] integer device tensors (None: b, 0 and b). The rows count B is the index tensors' length, or src's
    first dim when neither is given. The caller keeps src_start[b] + length within Ls (device values, not checked
    here: that would sync), and length within Ld.
    """
    if src.dim() != 4 or dst.dim() != 4 or src.shape[1] != dst.shape[1] or src.shape[3] != dst.shape[3]:
        raise ValueError(f"copy_windows: src {tuple(src.shape)} and dst {tuple(dst.shape)} must be [N, H, L, D] alike")
    if src.dtype != dst.dtype or src.stride(-1) != 1 or dst.stride(-1) != 1:
        raise ValueError("copy_windows: src and dst need one dtype and a contiguous last dim")
    if not 0 <= length <= dst.shape[2] or length > src.shape[2]:
        raise ValueError(f"copy_windows: length {length} does not fit src {tuple(src.shape)} / dst {tuple(dst.shape)}")
    counts = {len(t) for t in (src_rows, src_start, dst_rows) if t is not None} or {src.shape[0]}
    if len(counts) != 1 or any(t is not None and t.dim() != 1 for t in (src_rows, src_start, dst_rows)):
        raise ValueError("copy_windows: src_rows, src_start and dst_rows must be [B] tensors of one length")
    (rows,) = counts
    if src_rows is None and src.shape[0] < rows or dst_rows is None and dst.shape[0] < rows:
        raise ValueError(f"copy_windows: {rows} rows, but src has {src.shape[0]} and dst {dst.shape[0]}")
    if rows == 0 or length == 0:
        return
    heads, dim = src.shape[1], src.shape[3]
    _copy_windows_kernel[(rows, heads)](
        src,
        dst,
        src if src_rows is None else src_rows,  # an unused pointer where the index is absent
        src if src_start is None else src_start,
        src if dst_rows is None else dst_rows,
        length,
        src.stride(0),
        src.stride(1),
        src.stride(2),
        dst.stride(0),
        dst.stride(1),
        dst.stride(2),
        HAS_SRC_ROWS=src_rows is not None,
        HAS_SRC_START=src_start is not None,
        HAS_DST_ROWS=dst_rows is not None,
        DIM=dim,
        DIM_PAD=triton.next_power_of_2(dim),
        BLOCK_L=min(triton.next_power_of_2(max(length, 1)), max(4096 // triton.next_power_of_2(dim), 1)),
    )
