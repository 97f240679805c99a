# Session 32, call 4 (run 123). One-GPU call (nvidia-h200, ~3 minutes): the kernel census of the service's build with
# today's defaults (add_norm_kernel on since run 120), for the next step's picture.
# Prediction: 1x1 replay 337 -> 300-310 kernels (32 fewer add/norm kernels, run 118 had 337), 0.93-0.98 ms;
# 128x15 361 -> 325-335.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec_ticks.py --kernels 1x1 128x15 --rows 40 --ticks 1 --iters 3 \
    --out $OUT/kernels.json 2>&1 | grep -E '^\{"(device|kernels|check)' | cut -c1-600 || echo "TOOL FAILED"
stamp kernels
