"""NVIDIA's Multi-Process Service (MPS) for a stack on one machine: `omni serve --mps`.

Separate CUDA processes on one GPU time-slice it: while the talker's step runs, the codec's kernels wait, and the
other way round. Under MPS, every process started with the daemon's pipe directory in its environment is a client of
one server, and their kernels run side by side: the talker, queueing its steps ahead, then fills the GPU's idle time
without the codec's ticks waiting behind its steps (docs/benchmarks.md, runs 214-217).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

CONTROL = "nvidia-cuda-mps-control"  # the daemon's control program, shipped with the NVIDIA driver


@contextlib.contextmanager
def mps_daemon(work: Path) -> Iterator[dict[str, str]]:
    """An MPS control daemon for the duration, its pipes and logs under `work`. Yields the environment a process
    needs to be its client (every process that inherits it and makes a CUDA context is one). On the way out the daemon
    is told to quit, which waits for its clients to exit, and its logs are copied to `work/mps-*.log`. It starts a
    user-space daemon only: the card's compute mode and other settings are left as they are."""
    control = shutil.which(CONTROL)
    if control is None:
        raise RuntimeError(f"MPS: {CONTROL} is not on PATH (it ships with the NVIDIA driver)")
    pipes, logs = work / "mps-pipe", work / "mps-log"
    pipes.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    env = {"CUDA_MPS_PIPE_DIRECTORY": str(pipes), "CUDA_MPS_LOG_DIRECTORY": str(logs)}
    subprocess.run([control, "-d"], env={**os.environ, **env}, check=True)
    try:
        yield env
    finally:
        subprocess.run([control], input="quit\n", text=True, env={**os.environ, **env}, timeout=60)
        for name in ("control.log", "server.log"):
            if (logs / name).exists():
                shutil.copyfile(logs / name, work / f"mps-{name}")
