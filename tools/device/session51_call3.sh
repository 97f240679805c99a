# Run 183 (session 51, call 3) = next_one_gpu.sh as of this commit.
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~7 minutes), any time: run 182's sweep of the step's GEMM launches
# (tools/sweep_gemm_launch.py) at 32 rows, and the [1024, 3072] weights (the code predictor's down projections), on
# which run 182's sweep stopped with "CUDA error: an illegal instruction" at 16 rows: first each candidate launch on
# that shape alone, one a process (eager and in a graph under programmatic launch, against F.linear), then that
# shape's sweep at 16 and 32 rows last, in its own process.
# Why: run 182 (H100, 16 rows): on 7 of the 8 shapes it timed, no candidate beat the defaults by more than their
# noise (best +0.18 to +0.67%); on the [1024, 2048] weights (o_proj and small_to_mtp, 90 launches a step) 64x128 with
# no split-K took -1.27 / -1.01% of the step against split-K 4 (32x128), while 16x512 and 16x256 without split-K
# took +1.3 / +3.4% (fewer programs, faster).
# Prediction: at 32 rows the same: [1024, 2048] 64x128 k1 -0.5 to -2%, every other shape's best within +-0.7% of its
# default. The crash is one candidate, the same one eager and in a graph. Decides nothing alone.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
python3 -c "import sys; sys.path.insert(0, 'tools'); import sweep_gemm_launch as s; assert s.DEFAULTS == '$M'"
for i in 0 1 2 3 4 5 6 7; do
    timeout 90 python3 tools/sweep_gemm_launch.py --check 1024x3072:16:$i 2>&1 | grep -E "^check|Error|error" \
        | cut -c1-300
done
stamp checks
timeout 300 python3 tools/sweep_gemm_launch.py --rows 32 --skip-shapes 1024x3072 --json $OUT/sweep32.json 2>&1 \
    | grep -E "^rows|Error|error|Traceback" | cut -c1-400
stamp sweep32
timeout 150 python3 tools/sweep_gemm_launch.py --rows 16,32 --shapes 1024x3072 --json $OUT/sweep_down.json 2>&1 \
    | grep -E "^rows|Error|error|Traceback" | cut -c1-400
stamp sweep_down
