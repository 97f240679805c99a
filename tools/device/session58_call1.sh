# Run 205 (session 58, call 1) = tools/device/next_one_gpu_2.sh as it stood at session 58's start.
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~8 minutes), any time: A/B of the norm + RoPE + write + attention
# kernel on the backbone's passes (A: +norm-rope-attention, TalkerRunner's norm_rope_attention_kernel as session 57
# left it) against today's defaults (M), in the order M, A, M, A in one process, 1.7B, at 1 and 16 rows, then at 32,
# 128 and 512 rows, with the bench's checks (A against the two kernels, bit for bit; graph against eager).
# Why: run 201's first version (every one-position pass, 98 launches fewer) took 2.0-3.3% off the step at 16-128 rows
# but was 0.35-0.64% slower at 1 row and not the same bits. Since then each program runs its row's whole
# norm_rope_write_kv with that kernel's code and warps (run 203: keys, values and outputs equal in bf16 and fp32 at
# the backbone's launch), and only the backbone's 28 passes take it (the code predictor's 1-warp attention cannot
# share a kernel with the 4-warp norms: run 203 found its outputs not equal in fp32 and the step 4% slower at 1 row).
# Run 204, which was to check this version, ran out of the session's budget before printing.
# Prediction: A against M -0.3 to +0.5% at 1 row, -0.5 to -1.5% at 16, 32 and 128 rows, -0.3 to +0.3% at 512; its
# check equal.
# Rule: norm_rope_attention_kernel on by default if A is >= 0.3% faster than M at 16 and at 32 rows in all three
# comparisons (M1-A1, A1-M2, M2-A2), not > 0.3% slower at 1, 128 or 512 rows in all three, and its check equal (codes,
# caches, hidden, state); else it stays off.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
A=$M+norm-rope-attention
talker_order 1.7B 1,16 "$M,$A,$M,$A" ab
talker_order 1.7B 32,128,512 "$M,$A,$M,$A" ab_large
