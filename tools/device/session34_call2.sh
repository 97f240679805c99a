# Session 34, call 2 (run 129). One-GPU call (nvidia-h200, ~6 minutes): today's defaults (history_swap_kernel on
# since run 128) in the stack at 128, 512, 800 and 1,024 streams opened at once, with each level's GPU utilization.
# Why: run 121 (session 32's defaults) 852.7 / 1,452.3 / 1,474.3 audio-s/s at 128 / 512 / 800, GPU 84% / 90% / 91%;
# run 126 (window_pair_kernel on; a slower host) 774.0 / 1,335.3 / 1,428.9, 80% / 84% / 88%; 1,024 not run with
# these defaults (run 110: 1,405.6, no gap). history_swap_kernel: ticks -0.3 / -1.0 / -0.4% (run 128), so the codec's
# share moves by well under 1%: the stack measures the machine as much as the change.
# Prediction: 128 TTFA p99 180-240 ms; 512 1,320-1,500 audio-s/s with no gap; 800 1,330-1,500 and 1,024 1,350-1,500
# with at most 0.5% gapped, 0% with a 100 ms buffer; utilization 84-92% at 512 and above.
# No rule: a measurement (the default was decided in one process by run 128).
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 1024 --level-timeout 150 --out /tmp/T; save T
stamp stack
