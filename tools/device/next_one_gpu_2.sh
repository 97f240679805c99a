# One-GPU call (nvidia-h200, ~5 minutes), any time: today's defaults in the stack at 128, 512, 800 and 1,024 streams
# opened at once, with each level's GPU utilization and the codec's planned share, for the spread between machines.
# Why: run 129 (session 34's defaults: history_swap_kernel on) 818.0 / 1,425.1 / 1,401.8 / 1,523.2 audio-s/s at 128 /
# 512 / 800 / 1,024, no gapped request, GPU 83% / 89% / 91% / 90%; run 121 (session 32's) 852.7 / 1,452.3 / 1,474.3
# at 128 / 512 / 800; run 126 (session 33's, a slower host) 774.0 / 1,335.3 / 1,428.9. Each stack is one machine.
# Prediction: 128 TTFA p99 180-240 ms; 512 1,320-1,500 audio-s/s with no gap; 800 1,330-1,500 and 1,024 1,350-1,550
# with at most 0.5% gapped, 0% with a 100 ms buffer; utilization 84-92% at 512 and above.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 1024 --level-timeout 150 --out /tmp/T; save T
