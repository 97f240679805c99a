# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~6 minutes), any time: A/B of the code predictor's inputs looked up in
# projected tables (+projected-lookups, TalkerRunner's projected_lookups, built in session 53) against the projection
# GEMM on each looked-up embedding, M, P, M, P in one process, 1.7B, at 1, 16, 32 and 512 rows, with its checks (not
# bitwise: the tables' fp32 sums run in another order): codes agreeing with the projection in bf16 and in fp32.
# Why: proj(E_q(id)) is row id of proj(E_q.weight), so passes 2..15 of a 1.7B step need no [1024, 2048] GEMM (small_to_
# mtp; 6.52 us a launch at 16 rows in run 186's profile, H100), only one more gather each (~1.5 us): 14 GEMMs fewer a
# step. The 0.6B has no projection (equal widths): nothing to time.
# Prediction: 1 row -0.5 to -2%, 16 rows -0.8 to -2.5%, 32 rows -0.5 to -2%, 512 rows -0.1 to -1%; fp32 codes all equal.
# Rule: the talker setting projected_lookups on by default if 1 and 16 rows are each >= 0.5% faster in all three adjacent
# pairs, neither 32 nor 512 rows is > 0.3% slower in all three, the fp32 check has every code equal and the bf16 check's
# first-step hidden difference is no larger than fused_vs_sdpa's (bf16 against the PyTorch path, the tolerance the
# fused kernels were taken at); else it stays off.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
P=$M+projected-lookups
talker_order 1.7B 1,16,32,512 "$M,$P,$M,$P" ab
