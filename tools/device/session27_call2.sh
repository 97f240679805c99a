# Session 27 call 2: next_one_gpu_2.sh as it stood at the end of session 26, unchanged.
# One-GPU call (nvidia-h200, ~5 minutes), any time: today's defaults (every codec kernel on, the residual SnakeBeta kernel
# since session 26) in the stack at 128, 512, 800 and 1,024 streams opened at once, for the record.
# Why: session 26 measured the residual SnakeBeta kernel only at 512/800 (runs 101-102) and 1/128 (run 103); 1,024
# at once was measured only with session 25's default (run 100: 1,392.8 audio-s/s, 1.9% gapped, none with a 100 ms
# buffer). Between machines one build's 800-stream figure spread 1,338.1-1,475.5 (runs 95, 97, 100-102).
# Prediction: 128 TTFA p99 180-230 ms; 512 1,380-1,460 audio-s/s with no gap; 800 at most 0.5% gapped; 1,024
# 1,380-1,500 with 0.5-10% gapped, 0% with a 100 ms buffer, the gaps in the opening wave.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 1024 --level-timeout 170 --out /tmp/T; save T
