# Session 34, call 3 (run 130). One-GPU call (nvidia-h200, ~4 minutes): the codec step with today's default build
# (history_swap_kernel on since run 128) at 128 rows and 1, 2, 4, 8 and 15 frames, with kernel profiles of the eager
# step and every check (the checks' lines are in $OUT/codec_today.json).
# Why: to choose the next codec change from its profile; run 127's census: 272 kernels a 1x1 replay, 297 at 128x15.
# Prediction: graph 128x2 6.0-6.8 ms, 128x15 33.5-35.5 ms; 21 kernels fewer a replay than run 127 (128x15 276); in the 15-frame
# profile `_snakebeta_cl_kernel` 17 launches at 9-12% of the CUDA time, `_bias_residual_cl_kernel` 12 at 12-15%;
# every check passes.
# No rule: a measurement.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --fast-sine --window-kernel --transformer-kernels --rvq-kernel --attention-kernel \
    --residual-snake-kernel --history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel \
    --modes fused-cl,fused-cl+graph --batches 128 --chunks 1 2 4 8 15 --cudnn-benchmark --min-seconds 0.3 --profile \
    --out $OUT/codec_today.json 2>&1 | grep -v '"stages"' | cut -c1-400 | tail -80
stamp codec
