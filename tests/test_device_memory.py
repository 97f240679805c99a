"""A talker cache larger than its device's free memory is refused before it is allocated, with its size, the free
memory and the settings that change it (omni/device_memory.py; run 215's talker stopped in an out-of-memory traceback).

The caches asked for here are hundreds of TiB: without the check, torch's allocation fails instead (no machine has
that much memory), so each test fails if the refusal is missing.
"""

import re
import subprocess
import sys

import pytest
import torch

from omni.device_memory import GIB, NotEnoughMemory, ensure_room, free_bytes
from omni.fp8 import FP8_DTYPE
from omni.models.qwen3_tts.loader import load_qwen3_tts
from omni.talker.model_runner import TalkerRunner

SLOTS, POSITIONS = 4096, 2**26  # far past any machine's memory for even the tiny talker's cache


def _cache_bytes(model, slots: int, positions: int, element_size: int) -> int:
    """The talker's K and V by their definition: [layers, slots, positions, kv_heads, head_dim] each."""
    t = model.config.talker
    return 2 * t.num_hidden_layers * slots * positions * t.num_key_value_heads * t.head_dim * element_size


def _gib_in(message: str) -> tuple[float, float]:
    need, free = re.search(r"needs ([\d.]+) GiB and cpu has ([\d.]+) GiB free", message).groups()
    return float(need), float(free)


def test_free_bytes_on_the_cpu_is_the_kernels_available_memory():
    with open("/proc/meminfo") as meminfo:
        fields = dict(line.split(":", 1) for line in meminfo)
    free, total = free_bytes("cpu"), int(fields["MemTotal"].split()[0]) * 1024
    available = int(fields["MemAvailable"].split()[0]) * 1024
    assert 0 < free <= total and abs(free - available) < 2 * GIB  # read moments apart
    assert free_bytes("meta") is None


def test_ensure_room_refuses_only_what_does_not_fit():
    free = free_bytes("cpu")
    ensure_room(free // 4, "cpu", "a quarter of it")
    with pytest.raises(NotEnoughMemory, match=r"^a buffer needs [\d.]+ GiB and cpu has [\d.]+ GiB free$") as refused:
        ensure_room(free + 8 * GIB, "cpu", "a buffer")
    need, left = _gib_in(str(refused.value))
    assert need == pytest.approx((free + 8 * GIB) / GIB, abs=0.01) and left < need


@pytest.mark.parametrize("fp8", [False, True])
def test_a_runner_refuses_a_cache_past_the_memory_before_allocating_it(tiny_model_dir, fp8):
    model = load_qwen3_tts(tiny_model_dir("custom_voice"), dtype=torch.float32, device="cpu")
    with pytest.raises(NotEnoughMemory) as refused:
        TalkerRunner(model.talker, model.config, SLOTS, POSITIONS, kv_cache_dtype=FP8_DTYPE if fp8 else None)
    message = str(refused.value)
    dtype = "float8_e4m3fn" if fp8 else "float32"
    assert message.startswith(f"the talker's K/V cache ({SLOTS} slots x {POSITIONS} positions of {dtype}) needs ")
    need, _ = _gib_in(message)
    assert need == pytest.approx(_cache_bytes(model, SLOTS, POSITIONS, 1 if fp8 else 4) / GIB, abs=0.01)
    runner = TalkerRunner(model.talker, model.config, 3, 64)  # a cache that fits is made as before
    assert runner.cache.k.shape[1:3] == (3, 64) and runner.cache.k.device.type == "cpu"


def test_omni_talker_says_which_settings_size_a_cache_that_cannot_fit(tiny_model_dir):
    """`omni talker` exits with one line naming the cache, its size, the free memory and the settings; with fp8
    already on, the fp8 advice is left out and the size is a quarter of fp32's."""
    model_dir = tiny_model_dir("custom_voice")
    command = [sys.executable, "-m", "omni.cli", "talker", "--model", str(model_dir), "--device", "cpu"]
    command += ["--max-streams", str(SLOTS), "--max-context", str(POSITIONS), "--metrics-port", "-1"]
    lines = {}
    for dtype in ("auto", "fp8"):
        run = subprocess.run([*command, "--kv-cache-dtype", dtype], capture_output=True, text=True, timeout=300)
        assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
        lines[dtype] = run.stderr.strip().splitlines()[-1]
    auto, fp8 = lines["auto"], lines["fp8"]
    assert auto.startswith(f"omni talker: the talker's K/V cache ({SLOTS} slots x {POSITIONS} positions of float32)")
    settings = f"lower max_streams ({SLOTS}) or max_context ({POSITIONS})"
    assert auto.endswith(f"{settings}, or kv_cache_dtype fp8 (one byte a value)")
    assert fp8.endswith(settings) and "float8_e4m3fn" in fp8
    assert _gib_in(fp8)[0] == pytest.approx(_gib_in(auto)[0] / 4, rel=1e-3)
