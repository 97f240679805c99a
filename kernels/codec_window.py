"""The codec's streaming windows copied between its state and a step's buffers, rows indirected: the transformer's
K/V windows (`copy_windows`) and the stateful convs' input histories (`copy_history`).

A codec step (`CodecDecoder.decode_streams`, `codec_graphs.codec_step`) keeps each stream's last `window` keys and
values of every layer in `CodecState.key/value` [layers, slots, kv_heads, window, head_dim]. The PyTorch path moves
them with an index gather of every layer's rows, a concatenation with the new keys per layer, a gather of each
row's new window (an int64 index read per element), a stack and an index put: five passes over ~19 MB per layer
and tensor at 128 rows, whatever the chunk length, so they weigh most in short chunks. With `copy_windows` a
layer's past window goes from the state's rows straight into the [past ‖ new] buffer, and its new window from that
buffer straight back into the state's rows: two passes. Copies, so the state and the outputs keep the same bits.
With the codec's `window_pair_kernel` a layer's keys and values move together: `concat_windows` builds both [past ‖
new] buffers in one launch (the step's new keys and values copied in behind the past), `copy_windows(..., pair=)`
keeps both new windows in one: two launches a layer instead of six (the count, not the bytes, is what a short
chunk's step pays for).

Each of the 21 stateful convs carries its last `context` input samples (`CodecState.history`, [slots, channels,
context]) the same way, and there the cost is the kernel count, not the bytes (a few samples per row): the PyTorch
path spends ~6 small kernels per conv (a gather of the rows, the copy into the [history ‖ new] buffer, the end
index as a multiply, an arange and an add, its gather, and the index put at the end of the step) where
`copy_history` spends two, one each way, whatever the two tensors' memory layouts (the channels-last vocoder's
buffers are [B, T, C] in memory, the state [N, C, context]). With the codec's `history_swap_kernel`, `swap_history`
spends one: called once the buffer's new part is written, it fills the buffer's head from the state's row and
keeps the new history into that row in the same launch.
"""

import torch
import triton
import triton.language as tl
from omni.kernels import INTERPRETED


@triton.jit
def _copy_rows(
    b,
    src_rows_ptr,
    src_start_ptr,
    dst_rows_ptr,
    HAS_SRC_ROWS: tl.constexpr,
    HAS_SRC_START: tl.constexpr,
    HAS_DST_ROWS: tl.constexpr,
):
    """Row b's source row, destination row and source start (int64): the index tensors' entries, or b, b and 0."""
    src_row = b
    if HAS_SRC_ROWS:
        src_row = tl.load(src_rows_ptr + b).to(tl.int64)
    dst_row = b
    if HAS_DST_ROWS:
        dst_row = tl.load(dst_rows_ptr + b).to(tl.int64)
    start = 0
    if HAS_SRC_START:
        start = tl.load(src_start_ptr + b).to(tl.int64)
    return src_row, dst_row, start


@triton.jit
def _copy_windows_kernel(
    src_ptr,
    dst_ptr,
    src2_ptr,
    dst2_ptr,
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
    second = tl.program_id(2) == 1  # the pair's second copy (a layer's values beside its keys)
    src_row, dst_row, start = _copy_rows(
        b, src_rows_ptr, src_start_ptr, dst_rows_ptr, HAS_SRC_ROWS, HAS_SRC_START, HAS_DST_ROWS
    )
    d = tl.arange(0, DIM_PAD)
    src = tl.where(second, src2_ptr, src_ptr) + src_row * src_stride_n + head * src_stride_h
    dst = tl.where(second, dst2_ptr, dst_ptr) + dst_row * dst_stride_n + head * dst_stride_h
    for first in range(0, length, BLOCK_L):
        w = first + tl.arange(0, BLOCK_L).to(tl.int64)
        inside = (w < length)[:, None] & (d < DIM)[None, :]
        x = tl.load(src + (start + w)[:, None] * src_stride_l + d[None, :], mask=inside)
        tl.store(dst + w[:, None] * dst_stride_l + d[None, :], x, mask=inside)


@triton.jit
def _concat_windows_kernel(
    past_k_ptr,
    past_v_ptr,
    new_k_ptr,
    new_v_ptr,
    full_k_ptr,
    full_v_ptr,
    rows_ptr,
    window,
    length,
    past_stride_n,
    past_stride_h,
    past_stride_l,
    new_k_stride_b,
    new_k_stride_h,
    new_k_stride_l,
    new_v_stride_b,
    new_v_stride_h,
    new_v_stride_l,
    full_stride_b,
    full_stride_h,
    full_stride_l,
    DIM: tl.constexpr,
    DIM_PAD: tl.constexpr,
    BLOCK_L: tl.constexpr,
):
    # One program: row b, one head, keys (axis 2 = 0) or values (1): the state row's `window` positions, then the
    # step's `length` new ones behind them, each by a loop of its own (no tile mixes the two sources).
    b = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    second = tl.program_id(2) == 1
    row = tl.load(rows_ptr + b).to(tl.int64)
    past = tl.where(second, past_v_ptr, past_k_ptr) + row * past_stride_n + head * past_stride_h
    new_stride_l = tl.where(second, new_v_stride_l, new_k_stride_l)
    new = tl.where(second, new_v_ptr, new_k_ptr)
    new += b * tl.where(second, new_v_stride_b, new_k_stride_b) + head * tl.where(
        second, new_v_stride_h, new_k_stride_h
    )
    full = tl.where(second, full_v_ptr, full_k_ptr) + b * full_stride_b + head * full_stride_h
    d = tl.arange(0, DIM_PAD)[None, :]
    for first in range(0, window, BLOCK_L):
        w = (first + tl.arange(0, BLOCK_L).to(tl.int64))[:, None]
        inside = (w < window) & (d < DIM)
        tl.store(full + w * full_stride_l + d, tl.load(past + w * past_stride_l + d, mask=inside), mask=inside)
    full += window * full_stride_l
    for first in range(0, length, BLOCK_L):
        t = (first + tl.arange(0, BLOCK_L).to(tl.int64))[:, None]
        inside = (t < length) & (d < DIM)
        tl.store(full + t * full_stride_l + d, tl.load(new + t * new_stride_l + d, mask=inside), mask=inside)


def copy_windows(
    src: torch.Tensor,
    dst: torch.Tensor,
    length: int,
    src_rows: torch.Tensor | None = None,
    src_start: torch.Tensor | None = None,
    dst_rows: torch.Tensor | None = None,
    pair: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> None:
    """dst[dst_rows[b], h, w] = src[src_rows[b], h, src_start[b] + w] for every row b, head h and w < length.

    src [Ns, H, Ls, D] and dst [Nd, H, Ld, D] in one dtype with the last dim contiguous; src_rows, src_start and
    dst_rows [B] integer device tensors (None: b, 0 and b). The rows count B is the index tensors' length, or src's
    first dim when neither is given. The caller keeps src_start[b] + length within Ls (device values, not checked
    here: that would sync), and length within Ld. `pair` (src2, dst2), tensors of src's and dst's shapes, dtype and
    strides, is copied the same way by the same launch (a layer's values beside its keys).
    """
    if src.dim() != 4 or dst.dim() != 4 or src.shape[1] != dst.shape[1] or src.shape[3] != dst.shape[3]:
        raise ValueError(f"copy_windows: src {tuple(src.shape)} and dst {tuple(dst.shape)} must be [N, H, L, D] alike")
    if src.dtype != dst.dtype or src.stride(-1) != 1 or dst.stride(-1) != 1:
        raise ValueError("copy_windows: src and dst need one dtype and a contiguous last dim")
    if not 0 <= length <= dst.shape[2] or length > src.shape[2]:
        raise ValueError(f"copy_windows: length {length} does not fit src {tuple(src.shape)} / dst {tuple(dst.shape)}")
    src2, dst2 = pair if pair is not None else (src, dst)
    if any(_layout(a) != _layout(b) for a, b in ((src, src2), (dst, dst2))):
        raise ValueError("copy_windows: the pair's tensors need src's and dst's shapes, dtype and strides")
    rows = _row_count("copy_windows", src, dst, src_rows, src_start, dst_rows)
    if rows == 0 or length == 0:
        return
    heads, dim = src.shape[1], src.shape[3]
    _copy_windows_kernel[(rows, heads, 1 if pair is None else 2)](
        src,
        dst,
        src2,
        dst2,
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
        BLOCK_L=_window_block(length, dim),
    )


def concat_windows(
    past_keys: torch.Tensor, past_values: torch.Tensor, rows: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """A layer's [past ‖ new] keys and values in one launch: out[b] = cat(past[rows[b]], new[b]) along the positions.

    past_keys / past_values [N, H, W, D] (the state's layer, one layout for both), rows [B] integer device tensor,
    keys / values [B, H, T, D] (any strides, the last dim contiguous: the step's new ones) -> two contiguous
    [B, H, W + T, D] tensors. The same bits as `torch.cat([past[rows], new], dim=2)`.
    """
    if past_keys.dim() != 4 or _layout(past_keys) != _layout(past_values):
        raise ValueError("concat_windows: past keys and values need one [N, H, W, D] shape, dtype and strides")
    n, heads, window, dim = past_keys.shape
    b, t = keys.shape[0], keys.shape[2]
    if values.shape != keys.shape or keys.shape[1] != heads or keys.shape[3] != dim or rows.shape != (b,):
        raise ValueError(
            f"concat_windows: keys {tuple(keys.shape)}, values {tuple(values.shape)} and rows {tuple(rows.shape)} "
            f"do not fit the past [{n}, {heads}, {window}, {dim}]"
        )
    if {keys.dtype, values.dtype} != {past_keys.dtype} or keys.stride(-1) != 1 or values.stride(-1) != 1:
        raise ValueError("concat_windows: keys and values need the past's dtype and a contiguous last dim")
    full = torch.empty(2, b, heads, window + t, dim, dtype=keys.dtype, device=keys.device)
    if b and heads and window + t:
        _concat_windows_kernel[(b, heads, 2)](
            past_keys, past_values, keys, values, full[0], full[1], rows, window, t,
            *past_keys.stride()[:3], *keys.stride()[:3], *values.stride()[:3], *full[0].stride()[:3],
            DIM=dim, DIM_PAD=triton.next_power_of_2(dim), BLOCK_L=_window_block(max(window, t), dim),
        )  # fmt: skip
    return full[0], full[1]


def _layout(x: torch.Tensor) -> tuple:
    return x.shape, x.dtype, x.stride()


def _window_block(length: int, dim: int) -> int:
    """Positions per loop turn: the whole window where it fits in 4,096 elements."""
    return min(triton.next_power_of_2(max(length, 1)), max(4096 // triton.next_power_of_2(dim), 1))


def _row_count(
    name: str,
    src: torch.Tensor,
    dst: torch.Tensor,
    src_rows: torch.Tensor | None,
    src_start: torch.Tensor | None,
    dst_rows: torch.Tensor | None,
) -> int:
    """The rows B of a copy: the index tensors' one length, or src's first dim when none is given."""
    indices = [t for t in (src_rows, src_start, dst_rows) if t is not None]
    counts = {len(t) for t in indices} or {src.shape[0]}
    if len(counts) != 1 or any(t.dim() != 1 for t in indices):
        raise ValueError(f"{name}: src_rows, src_start and dst_rows must be [B] tensors of one length")
    (rows,) = counts
    if src_rows is None and src.shape[0] < rows or dst_rows is None and dst.shape[0] < rows:
        raise ValueError(f"{name}: {rows} rows, but src has {src.shape[0]} and dst {dst.shape[0]}")
    return rows


# Elements per program. Under the Triton interpreter (CPU tests) every program is a round of numpy calls, so there
# the tiles are large: fewer programs, same results.
HISTORY_TILE = 1 << 16 if INTERPRETED else 4096


@triton.jit
def _copy_history_kernel(
    src_ptr,
    dst_ptr,
    src_rows_ptr,
    src_start_ptr,
    dst_rows_ptr,
    channels,
    length,
    start_scale,
    src_stride_n,
    src_stride_c,
    src_stride_t,
    dst_stride_n,
    dst_stride_c,
    dst_stride_t,
    HAS_SRC_ROWS: tl.constexpr,
    HAS_SRC_START: tl.constexpr,
    HAS_DST_ROWS: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BLOCK_T: tl.constexpr,
):
    # One program: row b, channels [BLOCK_C tile], all `length` samples (BLOCK_T >= length). The load and the store
    # each follow their own tensor's strides; Triton moves the tile between the two orders when they differ.
    b = tl.program_id(0).to(tl.int64)
    src_row, dst_row, start = _copy_rows(
        b, src_rows_ptr, src_start_ptr, dst_rows_ptr, HAS_SRC_ROWS, HAS_SRC_START, HAS_DST_ROWS
    )
    start = start * start_scale
    c = (tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)).to(tl.int64)
    t = tl.arange(0, BLOCK_T).to(tl.int64)
    inside = (c < channels)[:, None] & (t < length)[None, :]
    src = src_ptr + src_row * src_stride_n + c[:, None] * src_stride_c + (start + t)[None, :] * src_stride_t
    x = tl.load(src, mask=inside)
    dst = dst_ptr + dst_row * dst_stride_n + c[:, None] * dst_stride_c + t[None, :] * dst_stride_t
    tl.store(dst, x, mask=inside)


def _history_tiles(
    name: str,
    src: torch.Tensor,
    dst: torch.Tensor,
    length: int,
    src_rows: torch.Tensor | None,
    src_start: torch.Tensor | None,
    dst_rows: torch.Tensor | None,
) -> tuple[tuple[int, int], int, int] | None:
    """A history copy's checks and tiling: src [Ns, C, Ls] and dst [Nd, C, Ld] alike, `length` samples fitting both;
    returns (grid, BLOCK_C, BLOCK_T), one program per row and channel tile, or None when there is nothing to copy."""
    if src.dim() != 3 or dst.dim() != 3 or src.shape[1] != dst.shape[1]:
        raise ValueError(f"{name}: {tuple(src.shape)} and {tuple(dst.shape)} must be [N, C, L] alike")
    if src.dtype != dst.dtype:
        raise ValueError(f"{name}: {src.dtype} against {dst.dtype}")
    if not 0 <= length <= dst.shape[2] or length > src.shape[2]:
        raise ValueError(f"{name}: length {length} does not fit {tuple(src.shape)} / {tuple(dst.shape)}")
    rows = _row_count(name, src, dst, src_rows, src_start, dst_rows)
    channels = src.shape[1]
    if rows == 0 or length == 0 or channels == 0:
        return None
    block_t = triton.next_power_of_2(length)
    block_c = min(triton.next_power_of_2(channels), max(HISTORY_TILE // block_t, 1))
    return (rows, triton.cdiv(channels, block_c)), block_c, block_t


def copy_history(
    src: torch.Tensor,
    dst: torch.Tensor,
    length: int,
    src_rows: torch.Tensor | None = None,
    src_start: torch.Tensor | None = None,
    dst_rows: torch.Tensor | None = None,
    start_scale: int = 1,
) -> None:
    """dst[dst_rows[b], c, t] = src[src_rows[b], c, src_start[b] * start_scale + t] for every row b, channel c and
    t < length.

    src [Ns, C, Ls] and dst [Nd, C, Ld] in one dtype, any strides (a conv's state is [N, C, context] contiguous, the
    channels-last vocoder's buffers [B, T, C] in memory); src_rows, src_start and dst_rows [B] integer device
    tensors (None: b, 0 and b). `start_scale` turns a row's valid frames into its input samples, so the end index
    needs no kernel of its own. The caller keeps src_start[b] * start_scale + length within Ls (device values, not
    checked here: that would sync).
    """
    tiles = _history_tiles("copy_history", src, dst, length, src_rows, src_start, dst_rows)
    if tiles is None:
        return
    grid, block_c, block_t = tiles
    channels = src.shape[1]
    _copy_history_kernel[grid](
        src,
        dst,
        src if src_rows is None else src_rows,  # an unused pointer where the index is absent
        src if src_start is None else src_start,
        src if dst_rows is None else dst_rows,
        channels,
        length,
        start_scale,
        *src.stride(),
        *dst.stride(),
        HAS_SRC_ROWS=src_rows is not None,
        HAS_SRC_START=src_start is not None,
        HAS_DST_ROWS=dst_rows is not None,
        BLOCK_C=block_c,
        BLOCK_T=block_t,
    )


@triton.jit
def _swap_history_kernel(
    history_ptr,
    full_ptr,
    rows_ptr,
    frames_ptr,
    channels,
    context,
    per_frame,
    h_stride_n,
    h_stride_c,
    h_stride_t,
    f_stride_n,
    f_stride_c,
    f_stride_t,
    BLOCK_C: tl.constexpr,
    BLOCK_T: tl.constexpr,
):
    # One program: row b, channels [BLOCK_C tile], all `context` samples. Everything is loaded before anything is
    # stored: the new history's head may still be old history (fewer new samples than context), read from the state
    # row this program then overwrites. Rows are distinct except padded scratch rows, which have 0 frames and so
    # store back what they load.
    b = tl.program_id(0).to(tl.int64)
    row = tl.load(rows_ptr + b).to(tl.int64)
    end = tl.load(frames_ptr + b).to(tl.int64) * per_frame  # row b's new samples: its new history starts there
    c = (tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)).to(tl.int64)
    t = tl.arange(0, BLOCK_T).to(tl.int64)
    inside = (c < channels)[:, None] & (t < context)[None, :]
    state = history_ptr + row * h_stride_n + c[:, None] * h_stride_c
    buffer = full_ptr + b * f_stride_n + c[:, None] * f_stride_c
    old = tl.load(state + t[None, :] * h_stride_t, mask=inside)
    p = end + t  # sample t of the new history in [history ‖ new] coordinates
    in_old = (p < context)[None, :]
    kept = tl.where(
        in_old,
        tl.load(state + p[None, :] * h_stride_t, mask=inside & in_old),
        tl.load(buffer + p[None, :] * f_stride_t, mask=inside & ~in_old),
    )
    tl.store(buffer + t[None, :] * f_stride_t, old, mask=inside)
    tl.store(state + t[None, :] * h_stride_t, kept, mask=inside)


def swap_history(
    history: torch.Tensor, full: torch.Tensor, rows: torch.Tensor, frames: torch.Tensor, per_frame: int
) -> None:
    """A conv's history both ways in one launch, for a buffer whose new part is written: for every row b, channel c
    and t < context (history's last dim), full[b, c, t] = history[rows[b], c, t] (the buffer's head) and
    history[rows[b], c, t] = [old history ‖ full's new part][b, c, frames[b] * per_frame + t] (the new history,
    the `context` samples just before row b's valid end). `copy_history` there and back, as one kernel.

    history [N, C, context] and full [B, C, context + T] in one dtype, any strides; rows and frames [B] integer
    device tensors. rows must be distinct but for rows with 0 frames (they store back what they read); the caller
    keeps frames[b] * per_frame <= T (device values, not checked here: that would sync)."""
    context = history.shape[-1]
    tiles = _history_tiles("swap_history", history, full, context, rows, frames, None)
    if tiles is None:
        return
    grid, block_c, block_t = tiles
    _swap_history_kernel[grid](
        history, full, rows, frames, history.shape[1], context, per_frame, *history.stride(), *full.stride(),
        BLOCK_C=block_c, BLOCK_T=block_t,
    )  # fmt: skip
