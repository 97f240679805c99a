"""The rows of the step whose kernels are being launched, for launch choices made deep inside the launchers.

The talker's runner sets it around each decode step (its batch) and prefill forward (its padded positions); CUDA
graphs keep what was launched while they were captured, so a graph bucket's launches follow its own rows. Read by
kernels/programmatic_launch.py (programmatic launch only up to some rows). Outside omni.kernels on purpose: the runner
imports it on any device, and importing that package fixes its INTERPRETED flag for the process (a test that sets
TRITON_INTERPRET after would run the kernels as on a GPU).
"""

from collections.abc import Iterator
from contextlib import contextmanager

_ROWS = [0]  # 0: outside any step (a kernel launched on its own: tests, tools/bench_pdl.py)


@contextmanager
def launching_rows(rows: int) -> Iterator[None]:
    """The launches inside the block belong to a step of `rows` rows."""
    before, _ROWS[0] = _ROWS[0], rows
    try:
        yield
    finally:
        _ROWS[0] = before


def launch_rows() -> int:
    """The rows of the step being launched now (0 outside a step)."""
    return _ROWS[0]
