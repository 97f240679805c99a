"""tools/profile_host.py, the codec service's host-cost profiler, runs against a real `omni codec` subprocess."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("shared_calls", [0, 2])
def test_null_model_profile_of_the_codec_service_accounts_for_every_chunk(shared_calls):
    # --null-model swaps the engine's decode for zeros of the shape a graph replay returns; the spans must still see
    # every chunk and step, in S16 too (4 streams × 61 frames: a 1-frame chunk, then four of 15), with a Decode call
    # per stream and with the streams over two shared DecodeMany calls (the gateway's client).
    command = [sys.executable, str(ROOT / "tools" / "profile_host.py"), "--streams", "4", "--null-model", "--s16"]
    command += ["--repeat", "1", "--shared-calls", str(shared_calls)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    level = json.loads(result.stdout.splitlines()[0])
    assert (level["streams"], level["chunks"], level["frames"]) == (4, 4 * 5, 4 * 61)
    # A step may decode nothing (fresh streams alone, an end marker alone, reading back the step in flight), so it is
    # the model calls that are bounded by the chunks; each is made inside a step.
    assert 1 <= level["decodes"] <= level["chunks"] and level["decodes"] <= level["steps"]
    assert level["audio_s_per_s"] > 0
    assert 0 <= level["model"] <= level["step"] and 0 <= level["deliver"] <= level["loop_cpu"] <= level["process_cpu"]
    assert "| server host CPU µs/chunk (no model call) |" in result.stdout
    assert f"|   of them with a model call | {level['decodes']} |" in result.stdout
