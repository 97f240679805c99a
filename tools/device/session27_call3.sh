# Session 27 call 3: next_one_gpu_3.sh as it stood at the end of session 26, unchanged.
# One-GPU call (nvidia-h200, ~4 minutes), any time: the codec step with today's default build (all six codec kernel
# flags) at 128 rows and 1, 2, 4, 8 and 15 frames, with kernel profiles of the eager step and every check.
# Why: run 99 profiled the step before the residual SnakeBeta kernel; after it, 12 SnakeBetas run inside the residual
# adds. The profile says what the next codec change is: the convs (~60% of the 15-frame CUDA time in run 99), the
# 17 separate SnakeBetas (5 of them the blocks' and the final one, 12 after conv1), the K/V window copies (5.3% of
# the 2-frame eager CUDA time) or the upsamplers' layout conversions (2.4%).
# Prediction: graph 128x2 6.8-7.3 ms, 128x15 34.5-36.0 ms (run 101: 6.924 and 35.230 in its processes); in the
# 15-frame profile `_snakebeta_cl_kernel` 17 launches at 9-12% of the CUDA time, `_bias_residual_cl_kernel` 12 at
# 12-14%; every check passes.
# No rule: a measurement, to choose the next change.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --fast-sine --window-kernel --transformer-kernels --rvq-kernel --attention-kernel \
    --residual-snake-kernel --modes fused-cl,fused-cl+graph --batches 128 --chunks 1 2 4 8 15 --cudnn-benchmark \
    --min-seconds 0.3 --profile --out $OUT/codec_today.json 2>&1 | grep -v '"stages"' | cut -c1-400 | tail -80
stamp codec
