# Session 24 call 4 (runs 89+): tools/device/next_one_gpu_4.sh as written in session 23, unchanged.
# One-GPU call (nvidia-h200, ~5 minutes), any time after next_one_gpu.sh: the 128-stream tail with today's defaults,
# twice, with the fast sine if next_one_gpu.sh turned it on (set FS=1 in the command line then), for the record.
# Runs 54-85: the default's TTFA p99 at 128 streams was under 250 ms in 13 of 17 stacks (211-249; 254-271 in the
# rest); run 85: 241 ms with session 22's defaults. The talker's step is ~10% shorter since (run 86), which should
# shorten the first chunks' wait.
# Prediction: p99 215-250 ms in both stacks, p50 135-155 ms.
source tools/device/setup.sh
stamp start
env ${FS:+OMNI_CODEC_FAST_SINE=1} $S --concurrency 128 --out /tmp/T1; save T1
env ${FS:+OMNI_CODEC_FAST_SINE=1} $S --concurrency 128 --out /tmp/T2; save T2
python3 tools/compare_runs.py default=/tmp/T1,/tmp/T2
