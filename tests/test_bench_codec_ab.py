"""tools/bench_codec.py --ab: each decoder kernel setting against the build without it, in one process, rounds
alternating. On CPU (the Triton interpreter; CodecGraphs runs its steps eagerly) as a smoke test of the bookkeeping:
the timings themselves mean something only on the GPU."""

import json
import os
import subprocess
import sys
from pathlib import Path

from omni.models.qwen3_tts.codec import CodecDecoder

ROOT = Path(__file__).resolve().parent.parent


def bench_codec(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(ROOT / "tools" / "bench_codec.py"), "--device", "cpu", "--dtype", "float32"]
    env = os.environ | {"TRITON_INTERPRET": "1"}
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=300, env=env)


def test_each_setting_is_timed_against_the_build_without_it(tmp_path):
    out = tmp_path / "ab.json"
    done = bench_codec(
        "--tiny", "--modes", "fused-cl", "--batches", "2", "--chunks", "1", "2", "--min-seconds", "0.01",
        "--max-iters", "1", "--ab", "rvq_kernel,transformer_kernels,residual_snake_kernel", "--ab-rounds", "2",
        "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert not results["errors"]
    ab = results["ab"]
    sides = ["base", "rvq_kernel", "transformer_kernels", "residual_snake_kernel"]
    assert set(ab) == set(sides)
    assert all(set(by_chunk) == {"1", "2"} and all(len(v) == 2 for v in by_chunk.values()) for by_chunk in ab.values())
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"ab"')]
    assert [(line["ab"], line["chunk"]) for line in lines] == [(side, chunk) for side in sides for chunk in (1, 2)]
    assert all(line["vs_base_pct"] == 0.0 for line in lines if line["ab"] == "base")
    # each side switched on its own setting alone (window_kernel was never asked for: off on every side)
    off = dict.fromkeys(CodecDecoder.KERNEL_SWITCHES, False)
    assert results["ab_settings"] == {side: off | ({side: True} if side != "base" else {}) for side in sides}


def test_ab_side_of_settings_joined_by_plus_turns_them_on_together(tmp_path):
    out = tmp_path / "ab.json"
    done = bench_codec(
        "--tiny", "--modes", "fused-cl", "--batches", "2", "--chunks", "1", "--min-seconds", "0.01",
        "--max-iters", "1", "--ab", "rvq_kernel,rvq_kernel+residual_snake_kernel", "--ab-rounds", "1",
        "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert not results["errors"] and set(results["ab"]) == {"base", "rvq_kernel", "rvq_kernel+residual_snake_kernel"}
    off = dict.fromkeys(CodecDecoder.KERNEL_SWITCHES, False)
    assert results["ab_settings"] == {
        "base": off,
        "rvq_kernel": off | {"rvq_kernel": True},
        "rvq_kernel+residual_snake_kernel": off | {"rvq_kernel": True, "residual_snake_kernel": True},
    }
    done = bench_codec("--tiny", "--ab", "rvq_kernel+fast_sine")
    assert done.returncode == 2 and "unknown --ab settings ['fast_sine']" in done.stderr


def test_bad_ab_arguments_are_refused():
    done = bench_codec("--tiny", "--ab", "fast_sine")
    assert done.returncode == 2 and "unknown --ab settings ['fast_sine']" in done.stderr
    done = bench_codec("--tiny", "--modes", "eager", "--ab", "rvq_kernel")
    assert done.returncode == 2 and "needs fused-cl" in done.stderr
