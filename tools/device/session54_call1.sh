# Run 190 (session 54, call 1) = next_one_gpu_2.sh as written in session 53 (M/P/K at 1 and 16 rows, 1.7B)
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~5-6 minutes), any time: A/B/C of the code predictor's inputs looked up
# in projected tables (P: +projected-lookups, TalkerRunner's projected_lookups) and of that with the step's lookups and
# the frame's embedding sum as Triton kernels (K: P+lookup-kernels, kernels/frame_embedding.py), both built in session
# 53, against today's defaults (M), in the order M, P, K, M, P, K in one process, 1.7B, at 1 and 16 rows, with the
# checks: P against the projection (not bitwise: the tables' fp32 sums run in another order; codes agreeing in bf16,
# and in fp32 on the PyTorch paths), K against P's PyTorch lookups and adds (bit for bit), graph against eager.
# Why: proj(E_q(id)) is row id of proj(E_q.weight), so passes 2..15 of a 1.7B step need no [1024, 2048] GEMM (small_
# to_mtp: 6.52 us a launch at 16 rows in run 186's profile, H100), only a gather each. K then takes the step's 15
# talker-width lookups and 15 adds (PyTorch kernels, never launched early: run 188 put the early launch at 0.59 ms of
# a 1-row step) into 14 gathers and one sum that launch programmatically. The 0.6B has no projection.
# Prediction: P against M 1 row -0.5 to -2%, 16 rows -0.8 to -2.5%; K against M 1 row -1.5 to -4%, 16 rows -1.5 to
# -4%; fp32 codes all equal; K = P bit for bit.
# Rule (with next_one_gpu_3.sh's 32, 128 and 512 rows): the talker settings projected_lookups and lookup_kernels both
# on by default if K is >= 0.5% faster than M at 1 and at 16 rows in all three M/K comparisons (M1-K1, K1-M2, M2-K2),
# not > 0.3% slower at 32, 128 or 512 rows in all three, the fp32 check has every code equal, the bf16 check's first-
# step hidden difference is no larger than fused_vs_sdpa's (the tolerance the fused kernels were taken at) and K equals
# P bit for bit; else projected_lookups alone on if P passes the same; else both stay off.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
P=$M+projected-lookups
K=$P+lookup-kernels
talker_order 1.7B 1,16 "$M,$P,$K,$M,$P,$K" abc
