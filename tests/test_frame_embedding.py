"""kernels/frame_embedding.py against the PyTorch ops it replaces in a talker decode step, bit for bit: the gather of
a pass's input rows and the frame's embedding sum (adds in order, rounded after each). On CPU through the Triton
interpreter; tests/test_projected_lookups.py steps the runner with them."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.frame_embedding import frame_sum, gather_rows

from tests.kernel_runners import compile_for_sm90


@pytest.mark.parametrize("dim", [48, 1024, 1100])  # under one block, two whole blocks, a partial last block
def test_gather_rows_are_the_indexed_rows(dim):
    gen = torch.Generator().manual_seed(1)
    table = torch.randn(300, dim, generator=gen).bfloat16()
    ids = torch.tensor([5, 299, 0, 5])
    got = gather_rows(table, ids)
    assert got.is_contiguous() and torch.equal(got, table[ids])
    assert gather_rows(table, ids[:0]).shape == (0, dim)
    strided = torch.tensor([[7, 1], [250, 2], [7, 3]])[:, 0]  # a codebook's ids in row-major codes
    assert torch.equal(gather_rows(table, strided), table[strided])


def _sum_by_adds(start: torch.Tensor, tables: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    total = start
    for i in range(tables.shape[0]):
        total = total + tables[i][codes[i]]
    return total


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("group_major", [True, False])
def test_frame_sum_has_the_bits_of_the_adds_in_order(dtype, group_major):
    """15 books of 64 ids, 600-wide rows (a partial block), values over six decades so every add rounds; codes as the
    runner holds them, group-major [16, B] or the transposed view of row-major [B, 16], less codebook 0."""
    gen = torch.Generator().manual_seed(2)
    tables = (torch.randn(15, 64, 600, generator=gen) * 10 ** (torch.rand(15, 64, 1, generator=gen) * 6 - 3)).to(dtype)
    start = torch.randn(5, 600, generator=gen).to(dtype)
    frame = torch.randint(0, 64, (16, 5), generator=gen)
    codes = (frame if group_major else frame.t().contiguous().t())[1:]
    want = _sum_by_adds(start, tables, codes)
    got = frame_sum(start, tables, codes)
    assert got.dtype == dtype and torch.equal(got, want)
    assert not torch.equal(got, (start.float() + sum(tables[i][codes[i]].float() for i in range(15))).to(dtype))


def test_frame_sum_refuses_what_it_cannot_sum():
    tables = torch.zeros(3, 8, 16)
    start, codes = torch.zeros(2, 16), torch.zeros(3, 2, dtype=torch.long)
    with pytest.raises(ValueError, match="contiguous"):
        frame_sum(start, tables.transpose(1, 2), codes)
    with pytest.raises(ValueError, match=r"codes \[3, B\]"):
        frame_sum(start, tables, codes[:2])
    with pytest.raises(ValueError, match="one of"):
        frame_sum(start.bfloat16(), tables, codes)
    with pytest.raises(ValueError, match="integers"):
        frame_sum(start, tables, codes.float())
    with pytest.raises(ValueError, match="contiguous"):
        gather_rows(tables[0].t(), codes[0])


COMPILE = r"""
import sys, triton, torch
from triton.backends.compiler import GPUTarget
from omni.kernels.frame_embedding import _frame_sum_kernel, _gather_rows_kernel

target = GPUTarget("cuda", 90, 32)
for pdl in (False, True):
    sig = {"start_ptr": "*bf16", "tables_ptr": "*bf16", "codes_ptr": "*i64", "out_ptr": "*bf16",
           "start_stride_b": "i32", "codes_stride_n": "i32", "codes_stride_b": "i32", "table_stride_n": "i32",
           "DIM": "constexpr",
           "BOOKS": "constexpr", "BLOCK": "constexpr", "ROUND_TO": "constexpr", "PDL": "constexpr"}
    consts = {"DIM": 2048, "BOOKS": 15, "BLOCK": 512, "ROUND_TO": 1, "PDL": pdl}
    ptx = triton.compile(triton.compiler.ASTSource(_frame_sum_kernel, sig, consts), target=target).asm["ptx"]
    assert ("griddepcontrol.wait" in ptx) == pdl, pdl
    sig = {"table_ptr": "*bf16", "ids_ptr": "*i64", "out_ptr": "*bf16", "ids_stride": "i32", "DIM": "constexpr",
           "BLOCK": "constexpr", "PDL": "constexpr"}
    consts = {"DIM": 1024, "BLOCK": 512, "PDL": pdl}
    ptx = triton.compile(triton.compiler.ASTSource(_gather_rows_kernel, sig, consts), target=target).asm["ptx"]
    assert ("griddepcontrol.wait" in ptx) == pdl, pdl
print("compiled")
"""


def test_both_kernels_compile_for_sm90_with_and_without_programmatic_launch(tmp_path):
    """The interpreter skips the compiler's checks; the wheel's own toolchain compiles both for an H100/H200."""
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
