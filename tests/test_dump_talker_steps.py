"""tools/dump_talker_steps.py: a build's decode steps written and compared to the bit (as run 138 compared two
checkouts on the GPU), on the CPU's eager build."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = [sys.executable, str(ROOT / "tools/dump_talker_steps.py")]


def run(*args: str) -> subprocess.CompletedProcess:
    # skinny_linear off: under the interpreter its ~150 launches a step double the tool's time, and what is tested
    # here is the dump and the comparison (tests/test_skinny_linear.py covers the kernel in decode steps).
    env = os.environ | {"OMNI_TALKER_SKINNY_LINEAR": "0"}
    return subprocess.run([*TOOL, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def test_same_build_compares_equal_and_other_weights_do_not(tmp_path):
    dumps = {}
    for name, seed in (("a", "0"), ("b", "0"), ("c", "1")):
        dumps[name] = tmp_path / f"{name}.pt"
        done = run("--model", "tiny", "--slots", "4", "--steps", "3", "--device", "cpu", "--seed", seed,
                   "--out", str(dumps[name]))  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    same = run("--compare", str(dumps["a"]), str(dumps["b"]))
    assert same.returncode == 0, same.stdout + same.stderr[-2000:]
    result = json.loads(same.stdout)
    assert result["codes_equal"] and result["steps"] == 3 and result["last_hidden_equal"]
    other = run("--compare", str(dumps["a"]), str(dumps["c"]))
    assert other.returncode == 1
    result = json.loads(other.stdout)
    assert not result["talker_k_equal"] and not result["last_hidden_equal"]
