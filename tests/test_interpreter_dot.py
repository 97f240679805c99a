"""The CPU emulation of tl.dot gives a row the same bits wherever it sits in a tile, as the GPU's MMA does.

The Triton interpreter multiplies tiles with numpy's float32 matmul. On AVX2 machines OpenBLAS's FMA kernels round a
row by its place in the tile; tests/conftest.py selects kernels that do not (OPENBLAS_CORETYPE). Without it, tests
that compare one tiling against another, or a row alone against the same row in a batch, fail on those machines.
"""

import numpy as np


def test_a_matmul_row_has_the_same_bits_wherever_it_sits():
    rng = np.random.default_rng(0)
    for m, k, n in [(16, 16, 32), (64, 64, 128), (128, 64, 128), (32, 48, 16)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        order = rng.permutation(m)
        moved = a[order] @ b
        assert np.array_equal(moved, (a @ b)[order]), (m, k, n)
        alone = np.zeros_like(a)
        alone[-1] = a[0]  # a row alone in its tile (the others masked to zeros), at another place
        assert np.array_equal((alone @ b)[-1], (a @ b)[0]), (m, k, n)
