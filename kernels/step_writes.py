"""The talker decode step's writes at its rows' slots after the draw, in one Triton kernel.

After the talker's draw a step writes each row's slot state with PyTorch kernels: the next position (an add and an
index_put), the drawn id into the slot's history (`seen`, which the draw read first) and the last hidden state; a
padded batch (the CUDA graphs' `decode_step_padded`) then resets the scratch slot its spare rows stepped with 4
fills. None of those launches early (kernels/programmatic_launch.py), so each costs a launch with nothing overlapped.

`step_writes` does them all in one launch: a program per row and 512-wide block of the hidden state, and with a
scratch slot one more program that resets it. The scratch rows skip the writes the reset undoes (position, history),
so no two programs write one place with different values, whatever order they run in; their last hidden state is
written as PyTorch's index_put writes it (one of the rows', which one unspecified either way: only scratch rows read
it). The same values as the PyTorch ops: copies, an add of one and constants.
"""

import torch
import triton
import triton.language as tl
from omni.kernels.programmatic_launch import launch_options, wait_for_prior_kernels

BLOCK_D = 512  # features a program: a 2,048-wide row over 4 programs, a 1,024-wide one over 2


@triton.jit
def _step_writes_kernel(
    slots_ptr,
    ids_ptr,
    hidden_ptr,
    positions_ptr,
    next_pos_ptr,
    seen_ptr,
    last_hidden_ptr,
    drawn_ptr,
    finished_ptr,
    rows,
    scratch,
    ids_stride,
    hidden_stride,
    positions_stride,
    vocab,
    HIDDEN: tl.constexpr,
    VOCAB_BLOCK: tl.constexpr,
    BLOCK: tl.constexpr,
    PDL: tl.constexpr,
):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0).to(tl.int64)
    block = tl.program_id(1)
    if row < rows:
        slot = tl.load(slots_ptr + row).to(tl.int64)
        d = block * BLOCK + tl.arange(0, BLOCK)
        inside = d < HIDDEN
        hidden = tl.load(hidden_ptr + row * hidden_stride + d, mask=inside)
        tl.store(last_hidden_ptr + slot * HIDDEN + d, hidden, mask=inside)
        if (block == 0) & (slot != scratch):  # a scratch row's position and history: the reset program's
            position = tl.load(positions_ptr + row * positions_stride)
            tl.store(next_pos_ptr + slot, position + 1)
            drawn_id = tl.load(ids_ptr + row * ids_stride).to(tl.int64)
            tl.store(seen_ptr + slot * vocab + drawn_id, drawn_id >= 0)  # True: the id is a drawn one
    elif block == 0:  # the one program past the rows (launched only with a scratch slot): reset it
        tl.store(next_pos_ptr + scratch, 0)
        tl.store(drawn_ptr + scratch, 1)
        tl.store(finished_ptr + scratch, scratch < 0)  # False
        cols = tl.arange(0, VOCAB_BLOCK)
        tl.store(seen_ptr + scratch * vocab + cols, cols < 0, mask=cols < vocab)  # False


def step_writes(
    slots: torch.Tensor,
    ids: torch.Tensor,
    hidden: torch.Tensor,
    positions: torch.Tensor,
    next_pos: torch.Tensor,
    seen: torch.Tensor,
    last_hidden: torch.Tensor,
    drawn: torch.Tensor,
    finished: torch.Tensor,
    scratch: int | None,
) -> None:
    """At each row's slot s: next_pos[s] = positions + 1, seen[s, ids] = True, last_hidden[s] = hidden; then with
    `scratch` (a slot index) that slot reset: next_pos 0, drawn 1, finished False, no history. slots [B] integer,
    ids and positions [B] int64 (any stride), hidden [B, H] (rows contiguous); next_pos and drawn [S] int64, seen
    [S, V] bool, last_hidden [S, H] of hidden's dtype and finished [S] bool, all contiguous. Slots and ids within
    them (not checked: that would sync)."""
    b, width = hidden.shape[0], last_hidden.shape[1]
    if slots.dtype not in (torch.int32, torch.int64) or ids.dtype != torch.int64 or positions.dtype != torch.int64:
        raise ValueError(f"step_writes: integer slots, int64 ids and positions, got {slots.dtype}, {ids.dtype}, "
                         f"{positions.dtype}")  # fmt: skip
    if slots.shape != (b,) or ids.shape != (b,) or positions.shape != (b,) or hidden.shape[1:] != (width,):
        raise ValueError(
            f"step_writes: [B] slots, ids and positions and hidden [B, {width}], got {tuple(slots.shape)}, "
            f"{tuple(ids.shape)}, {tuple(positions.shape)} and {tuple(hidden.shape)}"
        )
    state = (next_pos, seen, last_hidden, drawn, finished)
    if any(not t.is_contiguous() for t in (slots, *state)) or hidden.stride(1) != 1:
        raise ValueError("step_writes: contiguous slots and slot state, hidden rows contiguous")
    kinds = (next_pos.dtype, drawn.dtype, seen.dtype, finished.dtype, last_hidden.dtype)
    if kinds != (torch.int64, torch.int64, torch.bool, torch.bool, hidden.dtype):
        raise ValueError(f"step_writes: int64 next_pos and drawn, bool seen and finished, last_hidden of hidden's "
                         f"dtype; got {kinds}")  # fmt: skip
    programs = b + (scratch is not None)
    if programs:
        vocab = seen.shape[1]
        _step_writes_kernel[(programs, triton.cdiv(width, BLOCK_D))](
            slots,
            ids,
            hidden,
            positions,
            next_pos,
            seen,
            last_hidden,
            drawn,
            finished,
            b,
            -1 if scratch is None else scratch,
            ids.stride(0),
            hidden.stride(0),
            positions.stride(0),
            vocab,
            HIDDEN=width,
            VOCAB_BLOCK=triton.next_power_of_2(vocab),
            BLOCK=BLOCK_D,
            num_warps=4,
            **launch_options(),
        )
