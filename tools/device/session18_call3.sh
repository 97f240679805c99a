# Session 18, call 3 (nvidia-h200, ~5 minutes, if device time is left): next_one_gpu.sh's open loop (the default at
# 80/96/104 requests/s; predictions in its header: 80/s and 96/s no gap, 104/s under 18%) and the codec profile
# (next_one_gpu_4.sh; prediction in its header).
source tools/device/setup.sh
stamp start
$S --concurrency 800 --arrival-seconds 25 --rates 80 96 104 --out /tmp/O; save O
python3 tools/bench_codec.py --modes eager fused-cl+graph --batches 128 --chunks 2 15 --cudnn-benchmark \
    --no-checks --min-seconds 0.3 --profile --out $OUT/codec_step.json 2>&1 | tail -80
stamp codec
