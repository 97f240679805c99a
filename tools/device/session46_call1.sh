# Run 175 (session 46, call 1): was next_one_gpu_3.sh.
# One-GPU call (nvidia-h200, ~7 minutes), any time: early weights (talker setting programmatic_early_weights: the
# GEMM kernels load their first weight chunk before waiting for the kernels ahead) against today's defaults, which
# since run 173 launch the step's kernels programmatically in steps of at most 64 rows (+pdl+pdl-to-64). The 1.7B step
# at 1, 16, 32, 64 and 512 rows in one process, both orders; each process checks graphs with the launch (and early
# weights) against graphs without it, bit for bit.
# Why: with programmatic launch a GEMM's programs are resident while the kernel ahead of it (a norm, the attention, a
# draw) runs, but wait before touching memory; its weights do not depend on that kernel, so its first chunk could
# stream meanwhile. Against: run 171's chain of one-row norms and GEMMs was 1.6% slower with it (2.344 -> 2.381 us a
# kernel), and the dot kernel runs one pipeline stage fewer with it (dot_stages: 4 stages and the chunk overflowed
# shared memory in run 171).
# Prediction: 1 row -2 to +2%, 16 and 32 rows -2 to +2%, 64 rows within 1%, 512 rows within 0.3% (no programmatic
# launch there, so no early weights either).
# Rule: on by default (programmatic_early_weights True) if the checks are equal in both processes, the 1- and 16-row
# steps are >= 1% faster in both orders and no row count is > 0.5% slower in both orders. If it turns on, write the
# snapshot again (compare_kernel_code.py --write-snapshot kernels/timed_code.json --note "run N").
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
talker_order 1.7B 1,16,32,64,512 "$M,$M+early-weights" early1
talker_order 1.7B 1,16,32,64,512 "$M+early-weights,$M" early2
