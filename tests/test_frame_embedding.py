"""kernels/frame_embedding.py against the PyTorch ops it replaces in a talker decode step, bit for bit: the gather of
a pass's input rows, the frame's embedding sum (adds in order, rounded after each) and the step's gathers at its
slots. On CPU through the Triton
interpreter; tests/test_projected_lookups.py steps the runner with them."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.frame_embedding import frame_sum, gather_rows, step_inputs

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
    # `then` (the talker's text vector) added last, rounded as the runner's add: (sum + then), not sum + (then + ...)
    then = (torch.randn(5, 600, generator=gen) * 100).to(dtype)
    with_then = frame_sum(start, tables, codes, then=then)
    assert torch.equal(with_then, want + then) and not torch.equal(with_then, got)


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
    with pytest.raises(ValueError, match=r"then must be a contiguous \[2, 16\]"):
        frame_sum(start, tables, codes, then=torch.zeros(16, 2).t())
    with pytest.raises(ValueError, match="contiguous"):
        gather_rows(tables[0].t(), codes[0])


def _step_inputs_by_pytorch(slots, state, codec_table, text_table, pad_id):
    """TalkerRunner._decode_step's PyTorch ops for what `step_inputs` gathers."""
    drawn = state["drawn"][slots]
    frame = drawn - 1
    code = state["pending"][slots]
    x = torch.stack([state["last_hidden"][slots], codec_table[code]], dim=1)
    max_len = state["trailing"].shape[1]
    text_ids = torch.where(
        frame < state["trailing_len"][slots],
        state["trailing"][slots, frame.clamp(max=max_len - 1)],
        torch.full_like(frame, pad_id),
    )
    return drawn, frame, code, x, text_ids, text_table[text_ids], state["next_pos"][slots][:, None]


@pytest.mark.parametrize(("hidden", "text_dim"), [(48, 48), (1100, 600), (600, 1100)])
@pytest.mark.parametrize("group_major", [True, False])
def test_step_inputs_are_the_runners_gathers(hidden, text_dim, group_major):
    """Rows in any order, a slot twice, a slot whose frame is -1 (nothing drawn: PyTorch's index wraps to the last
    column, and its trailing text is longer than that), frames inside, at and past the trailing text and past
    max_len; hidden and text widths either way round (the 0.6B's text is wider). Codebook 0's id is written into the
    codes' first codebook, group-major or a strided column of row-major codes."""
    gen = torch.Generator().manual_seed(3)
    rows, max_len, pad_id = 6, 10, 7
    state = {
        "drawn": torch.tensor([3, 0, 5, 13, 1, 4]),
        "pending": torch.tensor([11, 2, 0, 29, 5, 17]),
        "next_pos": torch.tensor([20, 4, 31, 50, 9, 12]),
        "trailing_len": torch.tensor([4, 3, 4, 10, 0, 5]),  # slot 2: frame 4 is past it; slot 3: frame 12 past max_len
        "trailing": torch.randint(pad_id + 1, 40, (rows, max_len), generator=gen),  # none the pad id
        "last_hidden": torch.randn(rows, hidden, generator=gen).bfloat16(),
    }
    codec_table = torch.randn(30, hidden, generator=gen).bfloat16()
    text_table = torch.randn(40, text_dim, generator=gen).bfloat16()
    slots = torch.tensor([3, 1, 0, 2, 3, 4, 5])
    b = slots.shape[0]
    codes = torch.full((16, b), -1) if group_major else torch.full((b, 16), -1).t()
    names = ("drawn", "pending", "next_pos", "trailing", "trailing_len", "last_hidden")
    got = step_inputs(slots, *(state[name] for name in names), codec_table, text_table, pad_id, codes[0], 16)
    drawn, frame, code, x, ids, text, positions = _step_inputs_by_pytorch(slots, state, codec_table, text_table, pad_id)
    assert torch.equal(got.drawn, drawn) and torch.equal(codes[0], code)
    assert torch.equal(got.counter, frame * 16) and got.counter.tolist()[:2] == [192, -16]  # SubtalkerRows' counter
    assert torch.equal(got.positions, positions) and torch.equal(got.x, x) and torch.equal(got.text, text)
    assert (codes[1:] == -1).all()  # nothing but codebook 0 written
    assert ids.tolist() == [7, ids[1], ids[2], 7, 7, 7, ids[6]] and min(ids[1], ids[2], ids[6]) > pad_id  # both kinds


def test_step_inputs_with_rope_tables_are_the_forwards_attention_inputs():
    """With rope tables (RoPE at positions 0..L-1, made by rope_cos_sin as a forward makes them) step_inputs also
    gives the talker forward's attention inputs at each row's position: the same (cos, sin) rows as rope_cos_sin at
    those positions, to the bit, and the key counts position + 1 (Decoder.attention_inputs' lengths). A position past
    the tables reads their last row; without tables nothing is made."""
    from omni.models.qwen3_tts.talker import rope_cos_sin, rope_frequencies

    gen = torch.Generator().manual_seed(5)
    rows, head_dim, length = 4, 16, 40
    frequencies = rope_frequencies(head_dim, 10000.0, torch.device("cpu"))
    cos, sin = rope_cos_sin(torch.arange(length)[None], frequencies, torch.bfloat16)
    tables = (cos[0, :, 0].contiguous(), sin[0, :, 0].contiguous())
    next_pos = torch.tensor([0, 39, 17, 45])  # the first and last rows, one inside, one past the tables
    state = [torch.ones(rows, dtype=torch.long), torch.zeros(rows, dtype=torch.long), next_pos]
    trailing, trailing_len = torch.zeros(rows, 4, dtype=torch.long), torch.zeros(rows, dtype=torch.long)
    hidden, codec, text = torch.randn(rows, 8, generator=gen), torch.randn(5, 8), torch.randn(5, 8)
    slots = torch.tensor([3, 0, 2, 1])
    args = (slots, *state, trailing, trailing_len, hidden, codec, text, 0, torch.zeros(rows, dtype=torch.long), 16)
    (got_cos, got_sin), lengths = step_inputs(*args, rope_tables=tables).attention
    positions = next_pos[slots][:, None]
    want_cos, want_sin = rope_cos_sin(positions.clamp(max=length - 1), frequencies, torch.bfloat16)
    assert torch.equal(got_cos, want_cos) and torch.equal(got_sin, want_sin)
    assert torch.equal(lengths, positions + 1) and lengths.tolist() == [[46], [1], [18], [40]]
    assert not torch.equal(got_cos[0], want_cos[1])  # rows at different positions differ
    assert step_inputs(*args).attention is None
    with pytest.raises(ValueError, match="rope tables"):
        step_inputs(*args, rope_tables=(tables[0][:, :12].contiguous(), tables[1][:, :12].contiguous()))


def test_step_inputs_refuse_what_they_cannot_gather():
    state = [torch.zeros(2, dtype=torch.long) for _ in range(3)]
    trailing, trailing_len = torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, dtype=torch.long)
    hidden, codec, text = torch.zeros(2, 8), torch.zeros(5, 8), torch.zeros(5, 6)
    slots, codes0 = torch.tensor([0, 1]), torch.zeros(2, dtype=torch.long)
    with pytest.raises(ValueError, match="int64"):
        step_inputs(slots, *state, trailing.int(), trailing_len, hidden, codec, text, 0, codes0, 16)
    with pytest.raises(ValueError, match=r"codec table \[V, 8\]"):
        step_inputs(slots, *state, trailing, trailing_len, hidden, text, text, 0, codes0, 16)
    with pytest.raises(ValueError, match="integers"):
        step_inputs(slots.float(), *state, trailing, trailing_len, hidden, codec, text, 0, codes0, 16)


COMPILE = r"""
import sys, triton, torch
from triton.backends.compiler import GPUTarget
from omni.kernels.frame_embedding import _frame_sum_kernel, _gather_rows_kernel, _step_inputs_kernel

target = GPUTarget("cuda", 90, 32)
for pdl in (False, True):
    sig = {"start_ptr": "*bf16", "tables_ptr": "*bf16", "codes_ptr": "*i64", "then_ptr": "*bf16", "out_ptr": "*bf16",
           "start_stride_b": "i32", "codes_stride_n": "i32", "codes_stride_b": "i32", "table_stride_n": "i32",
           "DIM": "constexpr", "BOOKS": "constexpr", "THEN": "constexpr", "BLOCK": "constexpr",
           "ROUND_TO": "constexpr", "PDL": "constexpr"}
    for then in (False, True):
        consts = {"DIM": 2048, "BOOKS": 15, "THEN": then, "BLOCK": 512, "ROUND_TO": 1, "PDL": pdl}
        ptx = triton.compile(triton.compiler.ASTSource(_frame_sum_kernel, sig, consts), target=target).asm["ptx"]
        assert ("griddepcontrol.wait" in ptx) == pdl, pdl
    sig = {"table_ptr": "*bf16", "ids_ptr": "*i64", "out_ptr": "*bf16", "ids_stride": "i32", "DIM": "constexpr",
           "BLOCK": "constexpr", "PDL": "constexpr"}
    consts = {"DIM": 1024, "BLOCK": 512, "PDL": pdl}
    ptx = triton.compile(triton.compiler.ASTSource(_gather_rows_kernel, sig, consts), target=target).asm["ptx"]
    assert ("griddepcontrol.wait" in ptx) == pdl, pdl
    sig = {name: "*i64" for name in ("slots_ptr", "drawn_ptr", "pending_ptr", "next_pos_ptr", "trailing_len_ptr",
                                     "trailing_ptr", "codes_ptr", "drawn_out_ptr", "counter_ptr",
                                     "positions_ptr")}
    sig |= {name: "*bf16" for name in ("last_hidden_ptr", "codec_table_ptr", "text_table_ptr", "x_ptr",
                                       "text_out_ptr")}
    sig |= {name: "*bf16" for name in ("rope_cos_ptr", "rope_sin_ptr", "cos_out_ptr", "sin_out_ptr")}
    sig |= {"lengths_ptr": "*i64", "codes_stride": "i32", "max_len": "i32", "pad_id": "i32", "rope_len": "i32"}
    sig |= {name: "constexpr" for name in ("DRAWS", "HIDDEN", "TEXT_DIM", "HEAD_DIM", "ROPE", "BLOCK", "PDL")}
    for rope in (False, True):
        consts = {"DRAWS": 16, "HIDDEN": 2048, "TEXT_DIM": 2048, "HEAD_DIM": 128, "ROPE": rope, "BLOCK": 512,
                  "PDL": pdl}
        ptx = triton.compile(triton.compiler.ASTSource(_step_inputs_kernel, sig, consts), target=target).asm["ptx"]
        assert ("griddepcontrol.wait" in ptx) == pdl, pdl
print("compiled")
"""


def test_the_kernels_compile_for_sm90_with_and_without_programmatic_launch(tmp_path):
    """The interpreter skips the compiler's checks; the wheel's own toolchain compiles all three for an H100/H200."""
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
