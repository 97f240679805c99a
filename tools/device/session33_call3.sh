# Session 33, call 3 (run 127). One-GPU call (nvidia-h200, ~5 minutes): what a codec replay launches with today's
# defaults (window_pair_kernel on since run 125), and the codec step at 128 rows with its profile, for the next change.
# Why: run 123 counted 304 kernels a 1x1 replay (1.050 ms at capture) and 329 at 128x15 before window_pair_kernel.
# Prediction: 1x1 replay 272 kernels (-32: per layer 4 window copies and 2 PyTorch copies become 2 launches),
# 128x15 297; 1x1 replay 0.95-1.05 ms at capture; graph step 128x2 6.0-6.8 ms, 128x15 33.5-35.5 ms; every check
# passes. No rule: a measurement.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec_ticks.py --kernels 1x1 128x15 --rows 40 --ticks 1 --iters 3 --out $OUT/census.json 2>&1 \
    | grep -E '^\{"kernels"|"check"|^\|' | cut -c1-1500
stamp census
python3 tools/bench_codec.py --fast-sine --window-kernel --transformer-kernels --rvq-kernel --attention-kernel \
    --residual-snake-kernel --history-kernel --add-norm-kernel --window-pair-kernel --modes fused-cl,fused-cl+graph \
    --batches 128 --chunks 2 15 --cudnn-benchmark --min-seconds 0.3 --profile --out $OUT/codec_today.json 2>&1 \
    | grep -v '"stages"' | grep -E '"check"|^\||error' | cut -c1-300 | tail -40
stamp codec
