# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~3 minutes), any time: A/B of dot_launch_for's split-free launch for
# [N <= 1024, 2N <= K < 3N] weights from 16 rows of a call (SPLIT_FREE_FROM; the 1.7B code predictor's o_proj and
# small_to_mtp: 64 features x 128-wide chunks, 4 stages, no split-K) against the launch before it, split-K 4 of
# 32 x 128 at every dot row count, pinned (+pin-1024x2048-32x128s4k4), at 8, 16 and 32 rows, in one process
# as M, P, M, P (one set-up: the device budget left 414 s): three adjacent pairs, both orders.
# Why: run 184 (H100) pinned the split-free launch at every dot row count: 16 rows -2.32 / -1.87%, 32 rows -1.72 /
# -1.42%, but 8 rows +2.27 / +2.25% (the kernel pads 8 and 16 rows alike to 16; the difference is the step around
# it). From 16 rows of a call, an 8-slot step keeps split-K on 14 of its 15 predictor passes (its first pass has 16
# rows: two positions a slot).
# Prediction: 16 rows -1.5 to -2.5%, 32 rows -1 to -2%, 8 rows within +-0.3%; checks equal.
# Rule: the split-free launch stays if 16 and 32 rows are each >= 0.5% faster than the pinned split-K in all three
# adjacent pairs (M1 P1, P1 M2, M2 P2) and 8 rows is not > 0.3% slower in all three; else dot_launch_for goes back
# to split-K at every row count.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
P=$M+pin-1024x2048-32x128s4k4
talker_order 1.7B 8,16,32 "$M,$P,$M,$P" ab
