# Run 240 (session 67, call 4): the state card under MPS with today's defaults (session 66: conv1_kernel and
# conv2_kernel on) on whichever card comes (asked for as nvidia-h200): the one-GPU stack, 1.7B, 1 / 16 / 32 / 128 /
# 512 streams opened at once, 6 rounds; on an H200 with time left, the same stack without MPS at 16 and 512 streams,
# 3 rounds.
# Prediction: on an H100 against run 219 (20.7 / 247.9 / 409.9 / 942.2 / 1,571.8): 1 to 128 streams within +-8%, 512
# streams 1,560-1,680 (run 237 today: 1,590.9 with 3 rounds), none gapped, TTFA p99 at 128 streams 150-230 ms; on an
# H200: 512 streams 1,650-1,850, and under MPS +5 to +15% over without at 512. No rule: a measurement of the state.
source tools/device/setup.sh
stamp start
$S --mps --concurrency 1 16 32 128 512 --level-timeout 150 --out /tmp/stack; save stack
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $(($(date +%s) - T0)) -lt 380 ]; then
    $S --rounds 3 --concurrency 16 512 --level-timeout 120 --out /tmp/nomps; save nomps
fi
