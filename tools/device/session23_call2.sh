# One-GPU call (nvidia-h200, ~7 minutes), after next_one_gpu.sh on the same machine if the time allows: the codec's
# fast sine on top of today's defaults (with the talker's shorter step from session 22), 512 and 800 streams.
# Runs 78-79 (session 22): fast sine 1,136.7 against 1,120.1 audio-s/s at 512 (101.5%; its rule asked 102%), 800
# 6% against 9% gapped; the codec ticked 13.7 -> 18.4 a second and the talker's step did not move. If the talker's
# step is shorter (short_pass_kernel), the talker holds the GPU less and the codec's saving may reach throughput.
# Prediction: 512 within +-2% of next_one_gpu.sh's default stack; no gap.
# Rule, written before the runs: `fast_sine` turns on by default if at 512 it has no gap at >= 102% of
# next_one_gpu.sh's default stack on the same machine and at 800 its gapped share is at most the default's + 3 points
# (the same rule as session 22's, against a new default).
source tools/device/setup.sh
stamp start
OMNI_CODEC_FAST_SINE=1 $S --concurrency 512 800 --level-timeout 150 --out /tmp/FS; save FS
[ -d /tmp/D ] && python3 tools/compare_runs.py default=/tmp/D fast_sin=/tmp/FS
