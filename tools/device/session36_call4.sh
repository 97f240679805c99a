# Session 36 call 4 (run 139), one GPU, what is left of the budget (~5 minutes): today's defaults in the stack at 512
# streams opened at once (the talker's RoPE made once, run 136, and the predictor's step work made once, run 138).
# Why: run 135 (session 35's defaults) 1,450.9 audio-s/s at 512, no gap, GPU 90%; the 1.7B step at 512 rows is since
# 11.730 (run 134) -> 11.523-11.543 ms (run 138), at 128 rows 6.726 -> 6.370-6.384.
# Prediction: 1,460-1,560 audio-s/s with no gapped request; GPU 88-92%. A measurement, no rule.
source tools/device/setup.sh
stamp start
$S --concurrency 512 --level-timeout 110 --out /tmp/T; save T
