# Run 175 (session 48, call 1): next_one_gpu_3.sh as it stood at 41ca6e7.
# One-GPU call (nvidia-h200, ~7-8 minutes), any time: two A/Bs against today's defaults in the same processes, at 1,
# 16, 64 and 512 rows, both orders (three modes a process): early weights (was next_one_gpu_3.sh) and the SiLU in the
# down projection only in 1-row steps (was next_one_gpu_4.sh), in one call to save a machine start (session 46 lost
# a third of its device budget to refused starts and then was lent none). 32 rows (early weights) and 2 rows (the
# SiLU) are left out to fit one call: run 174 took 128 + 160 s for two modes at four row counts.
# Early weights (programmatic_early_weights): the GEMM kernels load their first weight chunk before waiting for the
# kernels ahead (with programmatic launch, in steps of at most 64 rows).
#   Prediction: 1 row -2 to +2%, 16 rows -2 to +2%, 64 rows within 1%, 512 rows within 0.3% (no launch there).
#   Rule: on by default if the checks are equal in both processes, the 1- and 16-row steps are >= 1% faster in both
#   orders and no row count is > 0.5% slower in both orders.
# The SiLU in the down projection in 1-row steps (skinny_linear_silu_down, skinny_linear_silu_down_max_rows 1):
#   Prediction: 1 row -1 to -2% (run 174: -1.1 / -1.8% with it at every row count); 16, 64 and 512 rows within 0.3%
#   (no gated launch there).
#   Rule: on by default (both settings) if the checks are equal in both processes, the 1-row step is >= 1% faster in
#   both orders, and no other row count is > 0.3% slower in both orders.
# If either turns on, write the snapshot again (compare_kernel_code.py --write-snapshot kernels/timed_code.json).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
E=$M+early-weights
G=$M+silu-down+silu-down-to-1
talker_order 1.7B 1,16,64,512 "$M,$E,$G" both1
talker_order 1.7B 1,16,64,512 "$G,$E,$M" both2
