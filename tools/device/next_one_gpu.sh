# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~7 minutes), any time: A/B of the [1024, 2048] weights' dot launch
# (the code predictor's o_proj and small_to_mtp, 90 launches a 1.7B step), 64 features x 128-wide chunks, 4 stages,
# no split-K (+pin-1024x2048-64x128s4k1), against today's split-K 4 of 32 x 128 (dot_launch_for), both orders; then
# sweep_gemm_launch.py again on the two predictor shapes of N = 1024 at 8, 16 and 32 rows with the slots prefilled
# again before they finish (runs 182 and 183 stepped finished slots: their timings ran at positions clamped to 511,
# and both sweeps stopped on "an illegal instruction").
# Why: run 182 (H100, 16 rows) timed that launch at -1.27 / -1.01% of the step, the only candidate of 58 on eight
# shapes that beat its default by more than +-0.7%; run 183 at 32 rows had [1024, 3072] 16x128 k4 at -0.74 / -1.32%.
# Prediction: +pin 16 rows -0.8 to -1.5%, 32 rows -0.5 to -2%, 8 rows -1 to +0.3%, 1 row and 64 rows within 0.3% (the
# row kernel there; cuBLAS at 64); every check equal except the pinned GEMMs' sums (split-K adds its shares in
# another order: codes may differ where bf16 rounds differently, as with any launch change).
# Rule: dot_launch_for gives [N <= 1024, 2N <= K < 3N] weights 64 x 128, 4 stages, no split-K, if 16 and 32 rows are
# each >= 0.5% faster in both orders and none of 1, 8 and 64 rows is > 0.3% slower in both; else nothing changes.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
P=$M+pin-1024x2048-64x128s4k1
talker_order 1.7B 1,8,16,32,64 "$M,$P" ab1
talker_order 1.7B 1,8,16,32,64 "$P,$M" ab2
python3 -c "import sys; sys.path.insert(0, 'tools'); import sweep_gemm_launch as s; assert s.DEFAULTS == '$M'"
timeout 240 python3 tools/sweep_gemm_launch.py --rows 8,16,32 --shapes 1024x2048,1024x3072 --json $OUT/sweep.json \
    2>&1 | grep -E "^rows|Error|error|Traceback" | cut -c1-400
stamp sweep
