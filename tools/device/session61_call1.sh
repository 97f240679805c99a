# Run 219 (session 61, call 1) = next_one_gpu.sh on an H200; on an H100 (runs 216-218 already have the MPS A/B there)
# the state card under MPS only, then the decode-attention kernel's launch settings swept at the code predictor's shape.
# H200 prediction (next_one_gpu.sh's): under MPS against without, +15 to +30% at 16 streams and +5 to +15% at 512;
# under MPS 512 streams 1,600-1,750 audio-s/s, no gapped request; TTFA p99 at 128 streams 170-240 ms; 1 stream 20-24
# audio-s/s with TTFA p99 under 90 ms.
# H100 prediction: under MPS 1 / 16 / 32 / 128 / 512 streams 18-21 / 235-255 / 390-430 / 900-960 / 1,530-1,620
# audio-s/s, none gapped (runs 212, 216-217); the predictor's attention at 512 rows 8-10 us a call at today's LAUNCH_SHORT
# (run 26 on an H200: 9.2), and the sweep's best within 15% of it (so the launch settings are not the lever).
# No rule: it decides nothing.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    bash tools/device/next_one_gpu.sh
    exit $?
fi
source tools/device/setup.sh
stamp start
$S --mps --concurrency 1 16 32 128 512 --level-timeout 150 --out /tmp/stack; save stack
python3 tools/bench_decode_attention.py --shapes predictor --batches 16 128 512 --out $OUT/predictor_attention.json \
    2>&1 | tail -12 | cut -c1-250
stamp sweep
