# One-GPU call (nvidia-h200, ~5 minutes), any time: today's defaults (the talker's norm+rope+write kernel since
# session 28, run 109; the codec's kernels on by default, history_kernel since session 31) in the stack at 128, 512,
# 800 and 1,024 streams opened at once, with each level's GPU utilization (nvidia-smi, tools/gpu_sampler.py) and the
# codec's planned share, for the spread between machines.
# Why: run 110 (one machine) gave 833.7 / 1,426.3 / 1,355.6 / 1,405.6 audio-s/s, no gapped request at any level, the
# GPU 85% / 89% / 91% / 90% busy; session 26's defaults spread 3-10% between machines (runs 101-102, 106).
# Run 118 (session 31's defaults): 512 streams 1,444.7, no gap.
# Prediction: 128 TTFA p99 180-230 ms; 512 1,390-1,490 audio-s/s with no gap; 800 1,320-1,480 and 1,024 1,350-1,460
# with at most 0.5% gapped, 0% with a 100 ms buffer; utilization 86-92% at 512 and above.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 1024 --level-timeout 170 --out /tmp/T; save T
