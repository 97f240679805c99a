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
  15 gathers).

Both wait for the kernels ahead and let the next one launch (kernels/programmatic_launch.py) where programmatic
launch is on.
"""

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
    out_ptr,
    start_stride_b,
    codes_stride_n,
    codes_stride_b,
    table_stride_n,
    DIM: tl.constexpr,
    BOOKS: tl.constexpr,
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


def frame_sum(start: torch.Tensor, tables: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """start + sum over i, in order, of tables[i][codes[i]], rounded after every add: start [B, D] (rows contiguous),
    tables [n, V, D] contiguous of start's dtype, codes [n, B] integer (any strides, on the tables' device; within
    [0, V), not checked here) -> [B, D] contiguous."""
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
    out = torch.empty(rows, dim, dtype=start.dtype, device=start.device)
    if rows:
        _frame_sum_kernel[(rows, triton.cdiv(dim, BLOCK_D))](
            start,
            tables,
            codes,
            out,
            start.stride(0),
            codes.stride(0),
            codes.stride(1),
            tables.stride(0),
            DIM=dim,
            BOOKS=books,
            BLOCK=BLOCK_D,
            ROUND_TO=ROUNDING[tables.dtype],
            num_warps=4,
            **launch_options(),
        )
    return out
