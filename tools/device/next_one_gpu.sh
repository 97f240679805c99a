# One-GPU call (nvidia-h200, ~5 minutes), any time: today's defaults (every codec kernel on, the residual SnakeBeta kernel
# since session 26; the unit-tail GEMM off, runs 105 and 108) in the stack at 128, 512, 800 and 1,024 streams opened
# at once, for the record of the spread between machines.
# Why: one build's 512/800-stream figures were 1,432.1/1,475.5 and 1,423.2/1,438.9 (runs 101-102) and 1,386.0/1,326.9
# (run 106) on three machines; 1,024 at once had 2 of 6,144 requests gapped, none with a 100 ms buffer (run 106).
# Prediction: 128 TTFA p99 180-230 ms; 512 1,370-1,460 audio-s/s with no gap; 800 1,320-1,480 with at most 0.5%
# gapped; 1,024 1,350-1,450 with at most 2% gapped, 0% with a 100 ms buffer.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 1024 --level-timeout 170 --out /tmp/T; save T
