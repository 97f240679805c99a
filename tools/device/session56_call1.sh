# Run 195 (session 56, call 1) = next_one_gpu_2.sh as written.
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~4-5 minutes), any time: A/B of the step RoPE tables (R:
# +step-rope-tables, TalkerRunner's step_rope_tables, built in session 55) against today's defaults (M, with session
# 55's step input kernel), in the order M, R, M, R in one process, 1.7B, at 1 and 16 rows, with the bench's checks (R
# against the forward's own RoPE, bit for bit; graph against eager). next_one_gpu_3.sh has 32, 128 and 512 rows.
# Why: with the step input kernel on, the talker forward still makes its RoPE rows and key counts with 4 PyTorch
# kernels a step (mul, cos, sin, add; tools/census_talker_step.py). R reads them in the step input kernel from tables
# made once by position. Runs 193-194 put a PyTorch kernel taken out at ~1.3-1.7 us of a 1-row step (the step input
# kernel: 15 for 24-25 us; the step write kernel: 7 net for 7-11 us).
# Prediction: R against M 1 row -0.1 to -0.3%, 16 rows -0.1 to -0.3%, 32-512 rows -0.05 to -0.2%; R = M bit for bit.
# Rule (with next_one_gpu_3.sh): step_rope_tables on by default if R is >= 0.1% faster than M at 1 and at 16 rows in
# all three comparisons (M1-R1, R1-M2, M2-R2), not > 0.3% slower at 32, 128 or 512 rows in all three, and its check
# equal (codes, caches, hidden, state); else it stays off. (Runs 193-194: M against itself 0.06% apart at 1 row, 0.09%
# at 16.) Four modes, not six: on an H100 a fifth mode at 512 rows ran out of memory in run 194.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs
R=$M+step-rope-tables
talker_order 1.7B 1,16 "$M,$R,$M,$R" ab
