# Run 142 (session 37, call 3): next_one_gpu_2.sh as it stood.
# One-GPU call (nvidia-h200, ~5 minutes), any time: today's defaults in the stack at 128, 512, 800 and 1,024 streams
# opened at once, with each level's GPU utilization and the codec's planned share, for the spread between machines.
# Why: run 139 (session 36's defaults: the talker's RoPE and the code predictor's per-pass work made once) 1,494.4
# audio-s/s at 512, no gapped request, GPU 89%; 128, 800 and 1,024 not run with them. Run 135 (session 35's) 1,450.9 /
# 1,539.4 at 512 / 1,024, GPU 90%; run 129 (session 34's) 818.0 / 1,425.1 / 1,401.8 / 1,523.2 at 128 / 512 / 800 /
# 1,024, GPU 83% / 89% / 91% / 90%. Each stack is one machine.
# Prediction: 128 TTFA p99 170-240 ms; 512 1,400-1,560 audio-s/s with no gap; 800 1,400-1,580 and 1,024 1,450-1,650
# with at most 0.5% gapped, 0% with a 100 ms buffer; utilization 85-92% at 512 and above.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 1024 --level-timeout 150 --out /tmp/T; save T
