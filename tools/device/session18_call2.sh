# Session 18, call 2 (nvidia-h200, ~8 minutes): next_one_gpu_3.sh (the 200 ms lead floor at 128/512, and with 2-frame
# first chunks under load at 512; predictions in its header) and a second default stack at 128/512 on the same machine
# (next_one_gpu.sh's D2), so the floor's rule (next_one_gpu_2.sh) compares against two default stacks (call 1's D1).
source tools/device/setup.sh
stamp start
OMNI_TALKER_MIN_LEAD_MS=200 $S --concurrency 128 512 --out /tmp/G1; save G1
OMNI_TALKER_MIN_LEAD_MS=200 OMNI_TALKER_BUSY_STREAMS=0 $S --concurrency 512 --out /tmp/G2; save G2
$S --concurrency 128 512 --out /tmp/D2; save D2
python3 tools/compare_runs.py default=/tmp/D2 min_lead_200=/tmp/G1 min_lead_200_first2=/tmp/G2
