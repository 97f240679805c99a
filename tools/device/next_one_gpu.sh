# One-GPU call (nvidia-h200, ~4 minutes), any time: the codec step with today's default build (every codec kernel
# flag on by default, history_swap_kernel since run 128) at 128 rows and 1, 2, 4, 8 and 15 frames, with kernel
# profiles of the eager step and every check (the checks' lines are in $OUT/codec_today.json).
# Why: to choose the next codec change from its profile after a change; run 130 (session 34's defaults): graph 128x2
# 6.18 ms, 128x15 34.60; at 128x15 `_bias_residual_cl_kernel` 14.2% and `_snakebeta_cl_kernel` 10.4% of the eager
# CUDA time; run 131: a 1x1 replay 251 kernels, 128x15 276.
# Prediction (today's defaults): graph 128x2 5.9-6.8 ms, 128x15 33.3-35.5 ms; every check passes.
# Then the 1.7B talker step after session 34's RoPE tables (64 ops fewer a step, the same bits on the CPU; run 131:
# 6.794 / 11.788 ms at 128 / 512 rows on another build): 128 rows 6.4-6.9 ms, 512 rows 11.3-11.9 ms, every talker
# check bitwise (graph = eager padded; the fused kernels against what they replace).
# No rule: a measurement.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --fast-sine --window-kernel --transformer-kernels --rvq-kernel --attention-kernel \
    --residual-snake-kernel --history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel \
    --modes fused-cl,fused-cl+graph --batches 128 --chunks 1 2 4 8 15 --cudnn-benchmark --min-seconds 0.3 --profile \
    --out $OUT/codec_today.json 2>&1 | grep -v '"stages"' | cut -c1-400 | tail -80
stamp codec
python3 tools/bench_talker_step.py --models 1.7B --modes fused+sampler+kv-write+add-norm+norm-rope-write \
    --batches 128,512 --max-len 512 --check-steps 2 --iters 30 --json $OUT/talker_step.json 2>&1 \
    | grep -E "graph vs eager|norm.rope|batch [0-9]+:|Error|error" | cut -c1-300 | head -40
stamp talker
