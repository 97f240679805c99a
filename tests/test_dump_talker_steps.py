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
    # The eager build (TRITON_INTERPRET=0): what is tested here is the dump and the comparison. Under the interpreter,
    # which the suite's other modules set in the worker's environment, the tool builds the service's CUDA build, and
    # its kernels interpreted made each dump ~30 s alone and this test 411 s in a loaded CI run (2 s each eager);
    # the kernels' own tests step that build.
    env = os.environ | {"TRITON_INTERPRET": "0"}
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
