# Session 18, call 3 (nvidia-h200, ~6 minutes, if device time is left): the floor with 2-frame first chunks under load
# at 512 (next_one_gpu_3.sh's G2; prediction and rule in its header) and the default's open loop (next_one_gpu.sh's O:
# 80/s and 96/s no gap, 104/s under 18% predicted).
source tools/device/setup.sh
stamp start
OMNI_TALKER_MIN_LEAD_MS=200 OMNI_TALKER_BUSY_STREAMS=0 $S --concurrency 512 --out /tmp/G2; save G2
$S --concurrency 800 --arrival-seconds 25 --rates 80 96 104 --out /tmp/O; save O
