# Run 231 (session 64, call 1) = run 230 as written in session 63 (session63_call4.sh), which got no machine. Ran in
# one command after session64_call3.sh (run 233), on an H100.
# Run 230 (session 63, call 4) = the talker's memory refusal on CUDA (omni/device_memory.py, built this session and
# tested on the CPU only): free_bytes("cuda") against the driver's free memory, with 1 GiB cached by the allocator and
# unused counted as free; a tiny bf16 talker's runner refusing a 4,096-slot x 2^26-position cache and making one that
# fits; `omni talker --device cuda` with that size exiting with the one line.
# Prediction: free_bytes = mem_get_info's free (+- 0) before the cache, +1 GiB (+- 2 MiB) with the cached GiB; the
# refusal's GiB = 2 x layers x 4,096 x 2^26 x kv_heads x head_dim x 2 bytes; omni talker rc 1 and no traceback.
# No rule: a check of new code on the hardware.
source tools/device/setup.sh
stamp start
python3 -m omni.cli make-tiny-checkpoint --variant custom_voice --out /tmp/ck > /dev/null 2>&1
python3 - <<'PY'
from pathlib import Path

import torch

from omni.device_memory import GIB, NotEnoughMemory, free_bytes
from omni.models.qwen3_tts.loader import load_qwen3_tts
from omni.talker.model_runner import TalkerRunner

torch.cuda.init()
before, total = torch.cuda.mem_get_info()
print("free_bytes - driver free, nothing cached:", free_bytes("cuda") - before)
x = torch.empty(GIB, dtype=torch.uint8, device="cuda")
del x
driver, _ = torch.cuda.mem_get_info()
print("free_bytes - driver free, 1 GiB cached:", (free_bytes("cuda") - driver) / 2**20, "MiB")
model = load_qwen3_tts(Path("/tmp/ck"), dtype=torch.bfloat16, device="cuda")
t = model.config.talker
want = 2 * t.num_hidden_layers * 4096 * 2**26 * t.num_key_value_heads * t.head_dim * 2 / GIB
try:
    TalkerRunner(model.talker, model.config, 4096, 2**26)
    print("NOT REFUSED")
except NotEnoughMemory as error:
    print("refused:", error, "| expected GiB", round(want, 2))
runner = TalkerRunner(model.talker, model.config, 8, 256)
print("fits:", runner.cache.k.shape, runner.cache.k.device, runner.cache.k.dtype)
PY
timeout 120 python3 -m omni.cli talker --model /tmp/ck --device cuda --dtype bfloat16 --max-streams 4096 \
    --max-context 67108864 --metrics-port -1 > /tmp/talker.log 2>&1; echo "omni talker rc $?"
tail -2 /tmp/talker.log | cut -c1-300; grep -c Traceback /tmp/talker.log
stamp done
