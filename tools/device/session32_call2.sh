# Session 32, call 2 (run 121). One-GPU call (nvidia-h200, ~5 minutes): today's defaults in the stack at 128, 512
# and 800 streams opened at once, with each level's GPU utilization and the codec's planned share.
# Since run 118 (1,444.7 audio-s/s at 512, no gap): the codec's add_norm_kernel on (run 120: 128x2 step -2.5%, 1x1
# -3.7% in one process) and RoPE's products by an explicit mul.rn.f32 (the talker's q/k norm+RoPE and the codec's
# RoPE now bitwise against the eager ops, run 120; one more instruction per product, no timing expected).
# Prediction: 128 TTFA p99 180-240 ms; 512 1,420-1,500 audio-s/s with no gap; 800 1,330-1,490 with at most 0.5%
# gapped, 0% with a 100 ms buffer; utilization 86-92% at 512 and 800. A record of the defaults, not an A/B.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 --level-timeout 150 --out /tmp/T; save T
