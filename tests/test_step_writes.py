"""kernels/step_writes.py: a decode step's writes at its rows' slots after the draw (next position, history, last
hidden state) and a padded batch's scratch reset in one kernel, against the PyTorch ops they replace; and the runner
with it (`TalkerRunner(step_write_kernel=True)`) against without, bit for bit, through decode steps with and without
padding rows. tests/test_prefill_graphs.py runs the padded prefill with it."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.step_writes import step_writes

from tests.kernel_runners import PREFILLED_SLOTS, SERVICE_KERNELS, compile_for_sm90, prefilled_runner_pair

SLOTS, VOCAB = 6, 40
STATE = ("next_pos", "seen", "last_hidden", "drawn", "finished")


def _slot_state(width: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    return {
        "next_pos": torch.randint(0, 50, (SLOTS,), generator=gen),
        "seen": torch.rand(SLOTS, VOCAB, generator=gen) < 0.3,
        "last_hidden": torch.randn(SLOTS, width, generator=gen).bfloat16(),
        "drawn": torch.randint(0, 9, (SLOTS,), generator=gen),
        "finished": torch.rand(SLOTS, generator=gen) < 0.5,
    }


@pytest.mark.parametrize("width", [48, 1100])
@pytest.mark.parametrize("scratch", [None, SLOTS - 1])
def test_step_writes_are_the_runners_writes(width, scratch):
    """Rows in any order, ids and positions strided views (as the runner passes them); with a scratch slot, two rows
    stepping it and the slot reset after (next position 0, one drawn, not finished, no history), without one the
    last slot written as any other. The slots no row steps keep their state."""
    gen = torch.Generator().manual_seed(4)
    got = _slot_state(width, gen)
    want = {name: value.clone() for name, value in got.items()}
    slots = torch.tensor([3, 1, 5, 0, 5])
    ids = torch.randint(0, VOCAB, (5, 2), generator=gen)[:, 1]
    positions = torch.randint(0, 50, (5, 3), generator=gen)[:, 0]
    hidden = torch.randn(5, 2, width, generator=gen).bfloat16()[:, -1]
    step_writes(slots, ids, hidden, positions, *(got[name] for name in STATE), scratch)

    want["next_pos"][slots] = positions + 1
    want["seen"].index_put_((slots, ids), torch.tensor(True))
    want["last_hidden"][slots] = hidden
    if scratch is not None:
        want["next_pos"][scratch], want["drawn"][scratch], want["finished"][scratch] = 0, 1, False
        want["seen"][scratch] = False
    for name in ("next_pos", "seen", "drawn", "finished"):
        assert torch.equal(got[name], want[name]), name
    assert torch.equal(got["last_hidden"][:5], want["last_hidden"][:5])
    assert any(torch.equal(got["last_hidden"][5], hidden[row]) for row in (2, 4))  # one of the rows at slot 5


def test_step_writes_refuse_what_they_cannot_write():
    gen = torch.Generator().manual_seed(0)
    state = _slot_state(8, gen)
    slots, ids, positions = torch.tensor([0, 1]), torch.tensor([3, 4]), torch.tensor([5, 6])
    hidden = torch.randn(2, 8).bfloat16()
    with pytest.raises(ValueError, match="int64 ids"):
        step_writes(slots, ids.int(), hidden, positions, *state.values(), None)
    with pytest.raises(ValueError, match=r"hidden \[B, 8\]"):
        step_writes(slots, ids, hidden[:, :4], positions, *state.values(), None)
    with pytest.raises(ValueError, match="last_hidden of hidden's dtype"):
        step_writes(slots, ids, hidden.float(), positions, *state.values(), None)
    with pytest.raises(ValueError, match="contiguous"):
        step_writes(slots, ids, hidden.t().contiguous().t(), positions, *state.values(), None)


@pytest.mark.parametrize("step_input_kernel", [False, True])
def test_the_step_write_kernel_steps_as_the_pytorch_writes_bit_for_bit(tiny_model_dir, step_input_kernel):
    """The runner with the kernel against without: decode steps of the two prefilled slots (after a prefill that
    wrote through the kernel too), then padded steps with two rows on the scratch slot (the CUDA graphs' path), which
    ends reset. The same codes and finished flags every step, and the same caches, hidden states and slot state
    (counters, histories, positions) to the bit; the scratch slot's last hidden state is one of its rows' either
    way."""
    common = {**SERVICE_KERNELS, "fused_draws": True, "scratch_slot": True, "step_input_kernel": step_input_kernel}
    without, with_kernel = prefilled_runner_pair(
        tiny_model_dir("custom_voice"), fused=True, common=common, step_write_kernel=True
    )
    assert without.step_writes is None and with_kernel.step_writes is not None
    slots = torch.tensor(PREFILLED_SLOTS)
    scratch = with_kernel.scratch_slot
    padded = torch.tensor([*PREFILLED_SLOTS, scratch, scratch])
    for step in range(6):
        method, rows = ("decode_step", slots) if step < 3 else ("decode_step_padded", padded)
        want_codes, want_finished = getattr(without, method)(rows)
        got_codes, got_finished = getattr(with_kernel, method)(rows)
        assert torch.equal(got_codes, want_codes) and torch.equal(got_finished, want_finished), step
    for name in ("cache", "predictor_cache"):
        assert torch.equal(getattr(with_kernel, name).k, getattr(without, name).k), name
        assert torch.equal(getattr(with_kernel, name).v, getattr(without, name).v), name
    for name in ("pending", "next_pos", "drawn", "seen", "finished"):
        assert torch.equal(getattr(with_kernel, name), getattr(without, name)), name
    assert torch.equal(with_kernel.last_hidden[:scratch], without.last_hidden[:scratch])
    assert with_kernel.next_pos[scratch] == 0 and with_kernel.drawn[scratch] == 1
    assert int(with_kernel.drawn[PREFILLED_SLOTS[0]]) == 7  # the prefill's draw and 6 steps'


COMPILE = r"""
import triton
from triton.backends.compiler import GPUTarget
from omni.kernels.step_writes import _step_writes_kernel

target = GPUTarget("cuda", 90, 32)
for pdl in (False, True):
    sig = {"slots_ptr": "*i64", "ids_ptr": "*i64", "hidden_ptr": "*bf16", "positions_ptr": "*i64",
           "next_pos_ptr": "*i64", "seen_ptr": "*i1", "last_hidden_ptr": "*bf16", "drawn_ptr": "*i64",
           "finished_ptr": "*i1"}
    sig |= {name: "i32" for name in ("rows", "scratch", "ids_stride", "hidden_stride", "positions_stride", "vocab")}
    sig |= {name: "constexpr" for name in ("HIDDEN", "VOCAB_BLOCK", "BLOCK", "PDL")}
    consts = {"HIDDEN": 2048, "VOCAB_BLOCK": 4096, "BLOCK": 512, "PDL": pdl}
    ptx = triton.compile(triton.compiler.ASTSource(_step_writes_kernel, sig, consts), target=target).asm["ptx"]
    assert ("griddepcontrol.wait" in ptx) == pdl, pdl
print("compiled")
"""


def test_the_kernel_compiles_for_sm90_with_and_without_programmatic_launch(tmp_path):
    """The interpreter skips the compiler's checks; the wheel's own toolchain compiles it for an H100/H200."""
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
