# One-GPU call (nvidia-h200, ~5 minutes), any time: today's defaults in the stack at 128, 512, 800 and 1,024 streams
# opened at once, with each level's GPU utilization and the codec's planned share, for the spread between machines.
# Why: run 121 (one machine, session 32's defaults) gave 852.7 / 1,452.3 / 1,474.3 audio-s/s at 128 / 512 / 800, no
# gapped request, the GPU 84% / 90% / 91% busy; run 126 (session 33's: window_pair_kernel on; a host that ran the
# official a third slower) 774.0 / 1,335.3 / 1,428.9, none gapped, 80% / 84% / 88%; 1,024 not run with these
# defaults (run 110: 1,405.6, no gap).
# Prediction: 128 TTFA p99 180-240 ms; 512 1,320-1,500 audio-s/s with no gap; 800 1,330-1,500 and 1,024 1,350-1,500
# with at most 0.5% gapped, 0% with a 100 ms buffer; utilization 84-92% at 512 and above.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 1024 --level-timeout 150 --out /tmp/T; save T
