# One-GPU call (nvidia-h200, ~6 minutes), any time: the SiLU in the down projection only in 1-row steps
# (skinny_linear_silu_down with skinny_linear_silu_down_max_rows 1: +silu-down+silu-down-to-1) against today's
# defaults. The 1.7B step at 1, 2, 16 and 512 rows in one process, both orders; each process checks the gated MLPs
# against silu_mul bit for bit (at 1, 3, 16, 32 and 64 rows).
# Why: run 174 timed the SiLU in every down projection the kernels run: 1 row -1.1 / -1.8%, but 16 rows +26.8 /
# +26.5% and 32 rows +29.5 / +29.8%, where the dot kernel's 64 column blocks each form the gated input again
# (session 45's sm_90 compile: 2.2-2.8x the instructions). At 1 row the row kernel forms it once a column block too,
# but the input is one row, and one kernel fewer a layer is 33 launches fewer a step (28 + 5 layers; 15 passes of
# the predictor's 5 make 103 in all).
# Prediction: 1 row -1 to -2%; 2, 16 and 512 rows within 0.3% (no gated launch there).
# Rule: on by default (skinny_linear_silu_down True, skinny_linear_silu_down_max_rows 1) if the checks are equal in
# both processes, the 1-row step is >= 1% faster in both orders, and no other row count is > 0.3% slower in both
# orders. If it turns on, write the snapshot again (compare_kernel_code.py --write-snapshot kernels/timed_code.json
# --note "run N").
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
talker_order 1.7B 1,2,16,512 "$M,$M+silu-down+silu-down-to-1" silu1
talker_order 1.7B 1,2,16,512 "$M+silu-down+silu-down-to-1,$M" silu2
