# Run 182 (session 51, call 2) = next_one_gpu.sh as of this commit.
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~9 minutes), any time: the step's GEMM launches swept in place
# (tools/sweep_gemm_launch.py): each weight shape's dot-kernel launch pinned to each of 7-8 candidates, the 1.7B step
# at 16 and 32 rows captured and timed against today's defaults beside it, two rounds (the second in reverse order).
# Why: run 181 (H100, 16 rows, launch by launch) had the code predictor's GEMMs at 6.0-7.7 us a launch whatever their
# bytes: qkv (8.4 MB) 6.5, o_proj (4.2 MB, split-K 4) 7.6, gate_up (12.6 MB) 6.4, down (6.3 MB, split-K 4) 6.2 us;
# 330 launches, 1,944 us of the 4,895 us step at ~1.3 TB/s, where the backbone's 112 read at ~2.3 TB/s. The launches
# were chosen by run 159/162's weights timed alone (tools/bench_skinny_linear.py), not in the step.
# Prediction: at 16 rows the [1024, 2048] weights (o_proj and small_to_mtp, 90 launches) without split-K (16x512 s3)
# -1 to -3% of the step, the [1024, 3072] down projections likewise; other shapes within +-1% of their defaults.
# Decides nothing alone: a shape's launch changes only after a bench_talker_step A/B of the new rule, both orders.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
python3 -c "import sys; sys.path.insert(0, 'tools'); import sweep_gemm_launch as s; assert s.DEFAULTS == '$M'"
timeout 500 python3 tools/sweep_gemm_launch.py --rows 16,32 --rounds 2 --iters 40 --json $OUT/sweep.json 2>&1 \
    | grep -E "^rows|Error|error|Traceback" | cut -c1-400
stamp sweep
