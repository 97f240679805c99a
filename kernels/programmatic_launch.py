"""Programmatic dependent launch (sm_90+) for the talker step's kernels: a process-wide switch, off until the talker
service sets it (its `programmatic_launch`: on by default since run 173, in steps of at most 64 rows).

A step at a few rows is a chain of ~1,000 short kernels (run 168: a 1-row 1.7B step 3,640 us of wall time, 3,330 us
of kernels), each launched only when the one before it has finished. Launched with CUDA's programmatic stream
serialization (Triton's `launch_pdl`), a kernel's programs may be scheduled while the kernel before it is still
running: each waits (`griddepcontrol.wait`: until every prior kernel in the stream has completed and its memory is
visible) before it reads or writes anything, then lets the kernel after it launch (`griddepcontrol.launch_dependents`).
What overlaps is the launch and the programs' start, not memory traffic, so the results are the same bits. CUDA
graphs keep the launch attribute as a programmatic edge.

Each kernel that takes it has a `PDL: tl.constexpr` and calls `wait_for_prior_kernels(PDL)` first; its launcher passes
`**launch_options()`. Under the Triton interpreter (CPU tests) it is always off: the interpreter runs no PTX.

With `early_weights`, the GEMM kernels (kernels/skinny_linear.py) load their first chunk of weights before the wait
(`EARLY_WEIGHTS`): the weights do not depend on the kernels ahead, so a GEMM's first bytes may stream while the small
kernel ahead of it runs. The same sums in the same order; it changes only when the loads are issued, so the
interpreter runs it too.

Each kernel lets the next one launch right after its wait. Letting it in only after a GEMM's K loop (session 51's
`late_trigger`, run 188 on an H100) made the 1.7B step 16% slower at 1 row, 6.5% at 16 and 2% at 32; it was taken out
(git history: ef4afef).

With `max_rows`, only the launches inside a step of at most that many rows (omni/launch_rows.py: the runner's
decode steps and prefills; in CUDA graphs, each bucket as it was captured) take it, none outside a step: runs 171-173
made the 1.7B step 16% faster at 1 row, 3% at 32 and 0.7% at 64, but 1.2% slower at 256 and 0.5-1.0% at 512.
"""

import torch
import triton
import triton.language as tl
from omni.kernels import INTERPRETED

from omni.launch_rows import launch_rows

try:
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
except ImportError:  # a Triton without it: device_supports says no, so PDL is never set
    gdc_launch_dependents = gdc_wait = None

_ON = [False, False, 0]  # the switch, early_weights and max_rows (a list: set in place, read at every launch)


def set_programmatic_launch(on: bool, early_weights: bool = False, max_rows: int = 0) -> None:
    """Turn programmatic dependent launch on or off for every later launch of the kernels that take it (the talker
    service's `programmatic_launch` setting; bench_talker_step's +pdl), and the GEMMs' first weights before their
    wait (`programmatic_early_weights`; +early-weights); with `max_rows` (> 0) only in steps of at most that many rows
    (`programmatic_launch_max_rows`; +pdl-to-N). Graphs captured before keep theirs."""
    if max_rows < 0:
        raise ValueError(f"max_rows must be 0 (every step) or positive, got {max_rows}")
    _ON[:] = [bool(on), bool(early_weights), int(max_rows)]


def _within_rows() -> bool:
    """Whether the launch now is one the switch covers: any without max_rows, else one in a step of at most max_rows
    rows."""
    return not _ON[2] or 0 < launch_rows() <= _ON[2]


def early_weights() -> bool:
    """Whether the GEMM kernels load their first weight chunk before waiting for the kernels ahead."""
    return _ON[1] and _within_rows()


def device_supports() -> bool:
    """Whether programmatic dependent launch is there: this Triton has it and the current CUDA device is of compute
    capability 9.0 and up."""
    return gdc_wait is not None and torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)


def programmatic_launch() -> bool:
    """Whether the kernels launch programmatically now (never under the interpreter)."""
    return _ON[0] and not INTERPRETED and _within_rows()


def launch_options() -> dict:
    """The keywords a launcher adds to its kernel's launch: the kernel's PDL constexpr and Triton's launch_pdl."""
    on = programmatic_launch()
    return {"PDL": on, "launch_pdl": on}


@triton.jit
def wait_for_prior_kernels(PDL: tl.constexpr):
    """With PDL: wait until the kernels before this one in the stream have completed (their writes visible), then let
    the next kernel's programs be scheduled. The first thing a PDL kernel does: nothing it reads or writes can race
    with a kernel before it."""
    if PDL:
        gdc_wait()
        gdc_launch_dependents()
