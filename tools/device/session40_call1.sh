# Session 40 call 1 (run 157): next_one_gpu.sh as it stood.
# One-GPU call (nvidia-h200, ~5 minutes), any time: today's defaults (skinny_linear and fused_draws on since runs
# 154-155) in the stack at 128, 512, 800 and 1,024 streams opened at once, with each level's GPU utilization.
# Why: run 156 measured them at 1 and 512 streams only (25 ms TTFA p50; 1,517.8 audio-s/s, none gapped); against run
# 142 (session 36's defaults): 903.7 / 1,523.4 / 1,435.9 / 1,543.3 audio-s/s at 128 / 512 / 800 / 1,024, none gapped,
# TTFA p99 197 ms at 128, GPU 84 / 90 / 92 / 90%. The 512-row step is 1.4% shorter with fused_draws (run 155);
# skinny_linear is not used above 4 rows, so the stack's steps change only while few streams are open.
# Prediction: 128 TTFA p99 170-240 ms; 512 1,450-1,600 audio-s/s with no gap; 800 1,400-1,600 and 1,024 1,450-1,650
# with at most 0.5% gapped, 0% with a 100 ms buffer; utilization 85-93% at 512 and above.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 1024 --level-timeout 150 --out /tmp/T; save T
