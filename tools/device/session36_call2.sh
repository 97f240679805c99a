# Session 36 call 2 (run 137).
# One-GPU call (nvidia-h200, ~6 minutes; run it in a call of its own: run 133 ran past its limit with it after a
# census), any time: the codec step with today's default build (every codec kernel flag on by default,
# upsample_channels_last since run 132) at 128 rows and 1, 2, 4, 8 and 15 frames, with kernel profiles of the eager
# step and every check (the checks' lines are in $OUT/codec_today.json).
# Why: to choose the next codec change from its profile after a change; run 130 (session 34's defaults): graph 128x2
# 6.18 ms, 128x15 34.60; at 128x15 `_bias_residual_cl_kernel` 14.2% and `_snakebeta_cl_kernel` 10.4% of the eager
# CUDA time; run 133 (session 35's): a 1x1 replay 244 kernels, 128x15 266 and 32.70 ms at capture.
# Prediction (today's defaults): graph 128x2 5.8-6.6 ms, 128x15 32.5-34.5 ms; bias + residual 14-16% and SnakeBeta
# 10-12% of the eager CUDA time at 128x15 (their bytes unchanged, the whole a little shorter); no
# `nchwToNhwcKernel` in the 128x15 profile; every check passes.
# No rule: a measurement.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --fast-sine --window-kernel --transformer-kernels --rvq-kernel --attention-kernel \
    --residual-snake-kernel --history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel \
    --upsample-channels-last --modes fused-cl,fused-cl+graph --batches 128 --chunks 1 2 4 8 15 --cudnn-benchmark \
    --min-seconds 0.3 --profile --out $OUT/codec_today.json 2>&1 | grep -v '"stages"' | cut -c1-400 | tail -80
stamp codec
