"""Shared pytest fixtures. Each owner keeps their fixtures in one clearly named block."""

from collections.abc import Callable
from pathlib import Path

import pytest
import torch


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
