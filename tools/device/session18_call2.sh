# Session 18, call 2 (nvidia-h200, ~9 minutes), after the gateway fix (GcPauses observes outside the collector: run 65's
# 512-stream level froze when one gateway worker's GC callback waited on prometheus_client's multiprocess lock).
# The 200 ms lead floor at 800 open at once (run 65's F0 is the default on the same machine type: 91% gapped, 74% with
# the buffer; next_one_gpu_2.sh's prediction: under 30%), at 128/512 (next_one_gpu_3.sh's prediction), and the
# default at 128/512 again (run 65's D1 lost its 512 level to the freeze). The rule is in next_one_gpu_2.sh's header.
source tools/device/setup.sh
stamp start
OMNI_TALKER_MIN_LEAD_MS=200 $S --concurrency 800 --level-timeout 150 --out /tmp/F200; save F200
OMNI_TALKER_MIN_LEAD_MS=200 $S --concurrency 128 512 --out /tmp/G1; save G1
$S --concurrency 128 512 --out /tmp/D2; save D2
python3 tools/compare_runs.py default=/tmp/D2 min_lead_200=/tmp/G1,/tmp/F200
