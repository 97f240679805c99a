# Session 26 call 2: next_one_gpu_2.sh as it stood at the end of session 25, unchanged.
# One-GPU call (nvidia-h200, ~7 minutes), any time: today's defaults (every codec kernel on since session 25) in the
# stack at 128, 512, 800 and 1,024 streams opened at once, for the record: where the 800-at-once row's margin ends.
# Runs 95 and 97 (session 25): 512 streams 1,411.4 and 1,407.4 audio-s/s with no gap; 800 1,466.6 twice with no
# gapped request; 128 TTFA p99 190 ms.
# Prediction: 128 TTFA p99 180-230 ms; 512 1,380-1,440 with no gap; 800 at most 0.5% gapped; 1,024 1,450-1,520
# audio-s/s with 1-20% of requests gapped (0% with a 100 ms buffer), the gaps in the opening wave.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 1024 --level-timeout 170 --out /tmp/T; save T
