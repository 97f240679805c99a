"""Shared pytest fixtures. Each owner keeps their fixtures in one clearly named block."""

import os

# The Triton interpreter runs tl.dot through numpy's float32 matmul. OpenBLAS's FMA kernels (its Haswell ones, which
# AVX2 machines such as AMD EPYCs get) give a row other bits by its place in the tile, so a row's result would depend
# on the rows tiled beside it: the GPU's MMA never does, and the kernel tests assert it (flat against row tiles, a
# row alone against in a batch). OpenBLAS's Sandybridge kernels do not. Set before numpy loads OpenBLAS; subprocesses
# inherit it. tests/test_interpreter_dot.py checks it took.
os.environ.setdefault("OPENBLAS_CORETYPE", "Sandybridge")

from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    """One intra-op thread for the whole suite: tiny ops on a shared 2-core machine run many times faster than with
    threads that only spin and wait (`make test` also sets OMP_NUM_THREADS=1; this covers a bare `pytest`)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --- tiny Qwen3-TTS checkpoints (owner: T1, omni/models/qwen3_tts/tiny.py) -------------------------------------


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """`tiny_model_dir(variant)`: a tiny random checkpoint dir (seed 0, fp32), written once per session per variant."""
    from omni.models.qwen3_tts.tiny import write_tiny_checkpoint

    written: dict[str, Path] = {}

    def get(variant: str) -> Path:
        if variant not in written:
            written[variant] = write_tiny_checkpoint(tmp_path_factory.mktemp(f"tiny_{variant}"), variant, seed=0)
        return written[variant]

    return get


# --- end of tiny Qwen3-TTS checkpoints ---------------------------------------------------------------------------
