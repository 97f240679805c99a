# One-GPU call (nvidia-h200, ~6 minutes), any time: the codec step as the service runs it, split by stage; then the
# open loop with today's default.
# Run 70 profiled only the eager step (128 rows: 26.62 ms at 2 frames, 116.42 at 15; ~61% of the 15-frame step's
# CUDA time in element-wise kernels, the snake activations) beside the service's fused channels-last graphs (12.31
# and 45.97 ms). `fused-cl` (the service's decoder launched eagerly) gets the same stage split and kernel table.
# Prediction: in fused-cl at 15 frames the vocoder's blocks are still >= 70% of the step, now mostly convolutions
# (>= 50% of CUDA time in conv kernels); at 2 frames the decoder transformer is >= 40% of the step.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --modes eager,fused-cl,fused-cl+graph --batches 128 --chunks 2 15 --cudnn-benchmark \
    --no-checks --min-seconds 0.3 --profile --out $OUT/codec_step.json 2>&1 | tail -120
stamp codec
# Open loop at 96/104/112 requests/s (run 67 with the floor off and 3 frames: 0% at 96/s, 0.3% at 104/s; run 47: 48%
# at 112/s). Prediction: no gap at 96 and 104/s, under 10% at 112/s.
$S --concurrency 800 --arrival-seconds 25 --rates 96 104 112 --out /tmp/O; save O
python3 tools/compare_runs.py default=/tmp/O
