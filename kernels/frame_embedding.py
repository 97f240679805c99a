"""The talker decode step's embedding lookups as Triton kernels that launch programmatically with the rest of the step.

A 1.7B decode step looks up each codebook's embedding for the code predictor's next pass and sums the frame's 16
embeddings for the talker's next input: 15 gathers and 15 adds, PyTorch kernels among the step's Triton ones. A
PyTorch kernel launches only when the kernel before it has finished, and the kernel after it only when it has (it
never lets the next one in early), so each one costs a launch with nothing overlapped (run 188: the overlap is worth
0.59 ms of a 1-row step). Here:

- `gather_rows(table, ids)`: `table[ids]`, the same rows, for a pass's input from its projected table
  (`CodePredictor.projected_embeddings`);
- `frame_sum(start, tables, codes)`: `start + tables[0][codes[0]] + ... + tables[n-1][codes[n-1]]`, added in that
  order and rounded to the tables' dtype after every add, as PyTorch's element-wise add rounds, so the sum has the
  same bits as the step's adds: one launch for the frame where there were 15 adds (and, with the projected tables,
  15 gathers); with `then`, the talker's text vector added last, the next talker input's add.

- `step_inputs(...)`: what a decode step reads at its rows' slots before its first pass, in one launch where there
  were 16 PyTorch kernels: each row's drawn count, frame and first draw counter, codebook 0's id (into the codes),
  its position, the code predictor's first input [last hidden, codebook 0's embedding] and the text embedding row of
  the frame's trailing text id (the pad id past it). Gathers, a select and a multiply: the same values as the PyTorch
  ops.

All wait for the kernels ahead and let the next one launch (kernels/programmatic_launch.py) where programmatic
launch is on.
"""

from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from omni.kernels.programmatic_launch import launch_options, wait_for_prior_kernels
from omni.kernels.rvq_lookup import ROUNDING, round_to  # the rounding after each add, as PyTorch's add rounds

BLOCK_D = 512  # features a program: a 2,048-wide row over 4 programs, a 1,024-wide one over 2


@triton.jit
def _gather_rows_kernel(
    table_ptr, ids_ptr, out_ptr, ids_stride, DIM: tl.constexpr, BLOCK: tl.constexpr, PDL: tl.constexpr
):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0).to(tl.int64)
    d = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = d < DIM
    index = tl.load(ids_ptr + row * ids_stride).to(tl.int64)
    tl.store(out_ptr + row * DIM + d, tl.load(table_ptr + index * DIM + d, mask=inside), mask=inside)


@triton.jit
def _frame_sum_kernel(
    start_ptr,
    tables_ptr,
    codes_ptr,
    then_ptr,
    out_ptr,
    start_stride_b,
    codes_stride_n,
    codes_stride_b,
    table_stride_n,
    DIM: tl.constexpr,
    BOOKS: tl.constexpr,
    THEN: tl.constexpr,
    BLOCK: tl.constexpr,
    ROUND_TO: tl.constexpr,
    PDL: tl.constexpr,
):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0).to(tl.int64)
    d = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = d < DIM
    total = tl.load(start_ptr + row * start_stride_b + d, mask=inside, other=0.0).to(tl.float32)
    # Unrolled: every book's id and row can be loaded before the first add needs them.
    for book in tl.static_range(BOOKS):
        index = tl.load(codes_ptr + book * codes_stride_n + row * codes_stride_b).to(tl.int64)
        rows = tl.load(tables_ptr + book * table_stride_n + index * DIM + d, mask=inside, other=0.0)
        total = round_to(total + rows.to(tl.float32), ROUND_TO)
    if THEN:  # one more row added last (the talker's text vector)
        total = round_to(total + tl.load(then_ptr + row * DIM + d, mask=inside, other=0.0).to(tl.float32), ROUND_TO)
    # exact: the total is a value of the output's dtype
    tl.store(out_ptr + row * DIM + d, total.to(out_ptr.dtype.element_ty), mask=inside)


def _check_ids(ids: torch.Tensor, what: str) -> None:
    if ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"{what}: ids must be integers, got {ids.dtype}")


def gather_rows(table: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """table[ids]: table [V, D] contiguous, ids [B] integer on its device, any stride (a codebook's row of row-major
    codes is strided; within [0, V), not checked here: that would sync) -> [B, D] contiguous."""
    _check_ids(ids, "gather_rows")
    if table.dim() != 2 or not table.is_contiguous() or ids.dim() != 1:
        raise ValueError(f"gather_rows: a contiguous [V, D] table and [B] ids, got {tuple(table.shape)}, {ids.shape}")
    rows, dim = ids.shape[0], table.shape[1]
    out = torch.empty(rows, dim, dtype=table.dtype, device=table.device)
    if rows:
        _gather_rows_kernel[(rows, triton.cdiv(dim, BLOCK_D))](
            table, ids, out, ids.stride(0), DIM=dim, BLOCK=BLOCK_D, num_warps=4, **launch_options()
        )
    return out


def frame_sum(
    start: torch.Tensor, tables: torch.Tensor, codes: torch.Tensor, then: torch.Tensor | None = None
) -> torch.Tensor:
    """start + sum over i, in order, of tables[i][codes[i]] (+ `then` last, if given), rounded after every add: start
    [B, D] (rows contiguous), tables [n, V, D] contiguous of start's dtype, codes [n, B] integer (any strides, on the
    tables' device; within [0, V), not checked here), then [B, D] contiguous of start's dtype -> [B, D] contiguous."""
    _check_ids(codes, "frame_sum")
    if tables.dtype not in ROUNDING or start.dtype != tables.dtype:
        raise ValueError(f"frame_sum: start and tables of one of {list(ROUNDING)}, got {start.dtype}, {tables.dtype}")
    if tables.dim() != 3 or not tables.is_contiguous():
        raise ValueError(f"frame_sum: tables must be a contiguous [n, V, D] tensor, got {tuple(tables.shape)}")
    books, _, dim = tables.shape
    rows = start.shape[0]
    if start.dim() != 2 or start.shape[1] != dim or start.stride(1) != 1 or tuple(codes.shape) != (books, rows):
        raise ValueError(
            f"frame_sum: start [B, {dim}] with contiguous rows and codes [{books}, B], got {tuple(start.shape)} and "
            f"{tuple(codes.shape)}"
        )
    if then is not None and (then.shape != (rows, dim) or then.dtype != start.dtype or not then.is_contiguous()):
        raise ValueError(f"frame_sum: then must be a contiguous [{rows}, {dim}] {start.dtype} tensor, got "
                         f"{tuple(then.shape)} {then.dtype}")  # fmt: skip
    out = torch.empty(rows, dim, dtype=start.dtype, device=start.device)
    if rows:
        _frame_sum_kernel[(rows, triton.cdiv(dim, BLOCK_D))](
            start,
            tables,
            codes,
            start if then is None else then,  # not read without it
            out,
            start.stride(0),
            codes.stride(0),
            codes.stride(1),
            tables.stride(0),
            DIM=dim,
            BOOKS=books,
            THEN=then is not None,
            BLOCK=BLOCK_D,
            ROUND_TO=ROUNDING[tables.dtype],
            num_warps=4,
            **launch_options(),
        )
    return out


@triton.jit
def _step_inputs_kernel(
    slots_ptr,
    drawn_ptr,
    pending_ptr,
    next_pos_ptr,
    trailing_len_ptr,
    trailing_ptr,
    last_hidden_ptr,
    codec_table_ptr,
    text_table_ptr,
    codes_ptr,
    drawn_out_ptr,
    counter_ptr,
    positions_ptr,
    x_ptr,
    text_out_ptr,
    rope_cos_ptr,
    rope_sin_ptr,
    cos_out_ptr,
    sin_out_ptr,
    lengths_ptr,
    codes_stride,
    max_len,
    pad_id,
    rope_len,
    DRAWS: tl.constexpr,
    HIDDEN: tl.constexpr,
    TEXT_DIM: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    ROPE: tl.constexpr,
    BLOCK: tl.constexpr,
    PDL: tl.constexpr,
):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0).to(tl.int64)
    block = tl.program_id(1)
    slot = tl.load(slots_ptr + row).to(tl.int64)
    drawn = tl.load(drawn_ptr + slot)
    frame = drawn - 1
    code = tl.load(pending_ptr + slot).to(tl.int64)
    column = tl.minimum(frame, max_len - 1)
    column = tl.where(column < 0, column + max_len, column)  # a negative index counts from the end, as PyTorch's
    trailing = tl.load(trailing_ptr + slot * max_len + column)
    text_id = tl.where(frame < tl.load(trailing_len_ptr + slot), trailing, pad_id).to(tl.int64)
    if block == 0:
        position = tl.load(next_pos_ptr + slot)
        tl.store(codes_ptr + row * codes_stride, code)
        tl.store(drawn_out_ptr + row, drawn)
        tl.store(counter_ptr + row, frame * DRAWS)
        tl.store(positions_ptr + row, position)
        if ROPE:  # the talker forward's RoPE rows at the position (the tables' last past them) and its key count
            tl.store(lengths_ptr + row, position + 1)
            at = tl.minimum(position, rope_len - 1)
            r = tl.arange(0, HEAD_DIM)
            tl.store(cos_out_ptr + row * HEAD_DIM + r, tl.load(rope_cos_ptr + at * HEAD_DIM + r))
            tl.store(sin_out_ptr + row * HEAD_DIM + r, tl.load(rope_sin_ptr + at * HEAD_DIM + r))
    d = block * BLOCK + tl.arange(0, BLOCK)
    inside = d < HIDDEN
    hidden = tl.load(last_hidden_ptr + slot * HIDDEN + d, mask=inside)
    tl.store(x_ptr + row * 2 * HIDDEN + d, hidden, mask=inside)
    embedding = tl.load(codec_table_ptr + code * HIDDEN + d, mask=inside)
    tl.store(x_ptr + (row * 2 + 1) * HIDDEN + d, embedding, mask=inside)
    text_inside = d < TEXT_DIM
    text = tl.load(text_table_ptr + text_id * TEXT_DIM + d, mask=text_inside)
    tl.store(text_out_ptr + row * TEXT_DIM + d, text, mask=text_inside)


@dataclass(frozen=True)
class StepInputs:
    """What `step_inputs` gathered for B rows."""

    drawn: torch.Tensor  # [B] codebook-0 ids drawn so far
    counter: torch.Tensor  # [B] the first draw counter of the frame being completed ((drawn - 1) * draws_per_frame)
    positions: torch.Tensor  # [B, 1] the talker position the step writes
    x: torch.Tensor  # [B, 2, H] the code predictor's first input: [last hidden, codebook 0's embedding]
    text: torch.Tensor  # [B, text width] the text embedding row of the frame's trailing text id (the pad id past it)
    # With rope_tables: the talker forward's attention inputs at the positions, ((cos, sin) [B, 1, 1, head_dim],
    # lengths [B, 1]), as Decoder.attention_inputs makes them for the decode-attention kernel.
    attention: tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor] | None = None


def step_inputs(
    slots: torch.Tensor,
    drawn: torch.Tensor,
    pending: torch.Tensor,
    next_pos: torch.Tensor,
    trailing: torch.Tensor,
    trailing_len: torch.Tensor,
    last_hidden: torch.Tensor,
    codec_table: torch.Tensor,
    text_table: torch.Tensor,
    pad_id: int,
    codes0: torch.Tensor,
    draws_per_frame: int,
    rope_tables: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> StepInputs:
    """At each row's slot: `drawn[s]`, the draw counter frame * draws_per_frame (frame = `drawn[s] - 1`), `next_pos[s]`,
    [last_hidden[s], codec_table[pending[s]]] and text_table[trailing[s, min(frame, max_len - 1)] if frame <
    trailing_len[s] else pad_id]; `pending[s]` written into codes0 [B] (any stride). Slot tensors [rows] int64 and
    trailing [rows, max_len] int64, contiguous; the tables [V, D] contiguous, the codec's of last_hidden's width; ids
    within the tables (not checked: that would sync). With `rope_tables` (cos, sin [L, head_dim], contiguous: RoPE at
    positions 0..L-1) also the talker forward's attention inputs at next_pos[s]: those rows (row L-1 past them) and
    the key count next_pos[s] + 1."""
    _check_ids(slots, "step_inputs")
    b, hidden = slots.shape[0], last_hidden.shape[1]
    text_dim = text_table.shape[1]
    tensors = (drawn, pending, next_pos, trailing_len, trailing, last_hidden, codec_table, text_table)
    if any(not t.is_contiguous() for t in tensors) or any(t.dtype != torch.int64 for t in tensors[:5]):
        raise ValueError("step_inputs: contiguous int64 slot state and contiguous tables")
    if codec_table.shape[1] != hidden or codec_table.dtype != last_hidden.dtype or codes0.shape != (b,):
        raise ValueError(
            f"step_inputs: codec table [V, {hidden}] of the hidden state's dtype and codes0 [{b}], got "
            f"{tuple(codec_table.shape)} {codec_table.dtype} and {tuple(codes0.shape)}"
        )
    device = last_hidden.device
    attention, rope_len, head_dim = None, 1, 1
    if rope_tables is not None:
        cos, sin = rope_tables
        rope_len, head_dim = cos.shape
        if sin.shape != cos.shape or not (cos.is_contiguous() and sin.is_contiguous()) or head_dim & (head_dim - 1):
            raise ValueError(f"step_inputs: rope tables cos, sin [L, head_dim] contiguous, head_dim a power of 2; got "
                             f"{tuple(cos.shape)}, {tuple(sin.shape)}")  # fmt: skip
        rope = tuple(torch.empty(b, 1, 1, head_dim, dtype=t.dtype, device=device) for t in (cos, sin))
        attention = (rope, torch.empty(b, 1, dtype=torch.int64, device=device))
    out = StepInputs(
        drawn=torch.empty(b, dtype=torch.int64, device=device),
        counter=torch.empty(b, dtype=torch.int64, device=device),
        positions=torch.empty(b, 1, dtype=torch.int64, device=device),
        x=torch.empty(b, 2, hidden, dtype=last_hidden.dtype, device=device),
        text=torch.empty(b, text_dim, dtype=text_table.dtype, device=device),
        attention=attention,
    )
    # Without rope tables the kernel touches none of their pointers: any tensor stands in.
    (cos, sin), lengths = attention if attention is not None else ((out.x, out.x), out.drawn)
    cos_table, sin_table = rope_tables if rope_tables is not None else (out.x, out.x)
    if b:
        _step_inputs_kernel[(b, triton.cdiv(max(hidden, text_dim), BLOCK_D))](
            slots,
            drawn,
            pending,
            next_pos,
            trailing_len,
            trailing,
            last_hidden,
            codec_table,
            text_table,
            codes0,
            out.drawn,
            out.counter,
            out.positions,
            out.x,
            out.text,
            cos_table,
            sin_table,
            cos,
            sin,
            lengths,
            codes0.stride(0),
            trailing.shape[1],
            pad_id,
            rope_len,
            DRAWS=draws_per_frame,
            HIDDEN=hidden,
            TEXT_DIM=text_dim,
            HEAD_DIM=head_dim,
            ROPE=rope_tables is not None,
            BLOCK=BLOCK_D,
            num_warps=4,
            **launch_options(),
        )
    return out
