# Session 18, call 1 (nvidia-h200, ~9 minutes): next_one_gpu.sh's first stack and next_one_gpu_2.sh together (device
# time this session: 1,800 s, so three stacks per call). Predictions and the rule for the lead floor are in the headers
# of next_one_gpu.sh (the default at 128/512 and where the gateway's stalls come from) and next_one_gpu_2.sh (800
# requests open at once: default vs OMNI_TALKER_MIN_LEAD_MS=200; gaps 89% -> under 30% predicted).
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 --out /tmp/D1; save D1
$S --concurrency 800 --level-timeout 150 --out /tmp/F0; save F0
OMNI_TALKER_MIN_LEAD_MS=200 $S --concurrency 800 --level-timeout 150 --out /tmp/F200; save F200
python3 tools/compare_runs.py default=/tmp/D1,/tmp/F0 min_lead_200=/tmp/F200
