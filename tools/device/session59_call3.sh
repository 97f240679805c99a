# Run 214 (session 59, call 3) = next_one_gpu.sh's stack only, at 3 rounds a level, to fit the 317 s of device time
# left (the GEMM table dropped). Named `nvidia-h200`: on an H200 it is the state card the record lacks since session
# 54 (run 179: 20.6 / 208.8 / 346.5 at 1 / 16 / 32; runs 156-157: 1,517.8 and 1,392.2 at 512, session 39's
# defaults); on an H100 it is read against runs 212-213 only.
# Prediction on an H200: 16 and 32 streams 2-5% above run 179; 1 stream 20-22 audio-s/s, TTFA p99 under 90 ms; TTFA
# p99 at 128 streams 190-240 ms; 512 streams 1,450-1,560, no gapped request. On an H100: each level between run 212's
# and run 213's A figures (or within 3% of them), no gapped request. No rule: it decides nothing.
source tools/device/setup.sh
stamp start
$S --concurrency 1 16 32 128 512 --rounds 3 --level-timeout 100 --out /tmp/stack; save stack
