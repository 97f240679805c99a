# One-GPU call (nvidia-h200, ~9 minutes), right after next_one_gpu.sh on the same machine: today's default at 512 and
# 800 (the stacks next_one_gpu.sh's fast sine is read against, by its rule), then the 128-stream tail with the
# clients' connections opened before the clock, a second sample each.
# Run 74 (session 21): at 128 streams the default's TTFA p99 260 ms, with --warm-connections 232; the opening wave's
# way to the handler 76 -> 54 ms. Session 20's rule (bench_stack warms by default if that figure is under 50 ms and
# the client p99 falls >= 20 ms) missed its first half by 4 ms, on one stack each.
# Prediction: the default's 128-stream p99 240-270 ms, warm 220-245; first wave before the handler 60-90 default,
# 45-60 warm.
# Rule, written before the runs: bench_stack warms by default if over runs 74 and these two stacks the warm stacks'
# mean client p99 is >= 20 ms under the default's and their mean first-wave-before-handler p99 is under 60 ms.
source tools/device/setup.sh
stamp start
$S --concurrency 512 800 --level-timeout 150 --out /tmp/D; save D
$S --concurrency 128 --out /tmp/D128; save D128
$S --warm-connections --concurrency 128 --out /tmp/WARM; save WARM
python3 tools/compare_runs.py default=/tmp/D,/tmp/D128 warm_connections=/tmp/WARM
[ -d /tmp/FS ] && python3 tools/compare_runs.py default=/tmp/D fast_sin=/tmp/FS
