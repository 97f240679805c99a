"""`omni serve --mps`: where the talker queues its steps ahead, the refusals before anything starts, and the daemon's
start and quit. MPS itself needs an NVIDIA GPU; the GPU runs are docs/benchmarks.md's runs 214-217. Here the daemon's
control program is a stand-in script that records how it was called."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from omni import mps
from omni.commands.serve import mps_hint, talker_queues_ahead


def test_the_talker_queues_ahead_on_its_own_gpu_and_on_one_shared_with_a_codec_under_mps():
    for under_mps in (False, True):
        assert talker_queues_ahead("cuda:0", ["cuda:1"], under_mps)  # a GPU of its own
        assert not talker_queues_ahead("cpu", ["cuda"], under_mps)  # not on a GPU at all
    assert not talker_queues_ahead("cuda", ["cuda:0"], False)  # time-sliced with the codec
    assert talker_queues_ahead("cuda", ["cuda:0"], True)
    assert not talker_queues_ahead("cuda:0", ["cuda:1", "cuda:0"], False)  # one codec replica beside it
    assert talker_queues_ahead("cuda:0", ["cuda:1", "cuda:0"], True)


def test_serve_hints_at_mps_only_where_talker_and_codec_time_slice_a_gpu_and_mps_is_there():
    assert "omni serve --mps" in mps_hint("cuda", ["cuda:0"], False, True)  # one GPU, time-sliced
    assert mps_hint("cuda:0", ["cuda:1", "cuda:0"], False, True)  # a codec replica beside the talker
    assert mps_hint("cuda", ["cuda:0"], True, True) is None  # already under MPS
    assert mps_hint("cuda", ["cuda:0"], False, False) is None  # no control program to start it with
    assert mps_hint("cuda:0", ["cuda:1"], False, True) is None  # the talker has its GPU alone
    assert mps_hint("cpu", ["cpu"], False, True) is None  # no GPU


def serve(args: list[str], work: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "omni.cli", "serve", "--work-dir", str(work), "--port", "0", "--grpc-port", "0"]
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=300)


def test_serve_refuses_mps_without_a_gpu_before_starting_anything(tmp_path):
    done = serve(["--mps", "--device", "cpu"], tmp_path / "work", dict(os.environ))
    assert done.returncode == 2
    assert "--mps shares a GPU between the services' processes: it needs a cuda device" in done.stderr
    assert not (tmp_path / "work").exists()  # not even the tiny checkpoint was written


def test_serve_without_the_mps_control_program_fails_before_any_service_starts(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path / "empty")}  # the interpreter is named by its full path
    done = serve(["--mps", "--device", "cuda"], tmp_path / "work", env)
    assert done.returncode == 1
    assert "--mps: MPS: nvidia-cuda-mps-control is not on PATH" in done.stderr
    assert not list((tmp_path / "work").glob("*.log"))  # no service was started


STAND_IN = """#!/bin/sh
# Records each call: its arguments, the pipe directory it was given, and what came on stdin (the `quit`).
{ echo "args=$* pipes=$CUDA_MPS_PIPE_DIRECTORY stdin=$(if [ $# -eq 0 ]; then cat; fi)"; } >> "$MPS_CALLS"
[ "$1" = "-d" ] && echo "server log" > "$CUDA_MPS_LOG_DIRECTORY/server.log"
exit 0
"""


def test_the_daemon_is_started_before_the_block_and_told_to_quit_after_it_even_on_an_error(tmp_path, monkeypatch):
    bin_dir, calls, work = tmp_path / "bin", tmp_path / "calls.txt", tmp_path / "work"
    bin_dir.mkdir()
    control = bin_dir / "nvidia-cuda-mps-control"
    control.write_text(STAND_IN)
    control.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MPS_CALLS", str(calls))
    pipes = work / "mps-pipe"

    with pytest.raises(KeyError), mps.mps_daemon(work) as env:
        assert env == {"CUDA_MPS_PIPE_DIRECTORY": str(pipes), "CUDA_MPS_LOG_DIRECTORY": str(work / "mps-log")}
        assert calls.read_text().splitlines() == [f"args=-d pipes={pipes} stdin="]  # started, not yet quit
        raise KeyError("a service failed")

    assert calls.read_text().splitlines() == [f"args=-d pipes={pipes} stdin=", f"args= pipes={pipes} stdin=quit"]
    assert (work / "mps-server.log").read_text() == "server log\n"  # beside the services' logs
