# Run 201 (session 57, call 3) = next_one_gpu_2.sh as written (the norm + RoPE + write + attention kernel's A/B).
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~8 minutes), any time: A/B of the norm + RoPE + write + attention
# kernel (A: +norm-rope-attention, TalkerRunner's norm_rope_attention_kernel, built in session 57) against today's
# defaults (M), in the order M, A, M, A in one process, 1.7B, at 1 and 16 rows, then at 32, 128 and 512 rows, with the
# bench's checks (A against the two kernels, bit for bit; graph against eager).
# Why: each one-position layer pass of a step (the backbone's 28, the code predictor's passes 2-15: 70) launched
# kv_write's norm + RoPE + write kernel and then the decode-attention kernel. A does both in one kernel: each (row, kv
# head) program norms and rotates its heads, writes its key and value, waits at a CTA barrier and attends. 98 launches
# fewer a step, ~10% of a 16-row step's 1,004 (run 199); a small Triton kernel under programmatic launch costs ~1-2 us
# of a step (runs 193-196), and the fused kernel's prologue runs before its first key load.
# Prediction: A against M at 1 row -1.5 to -4.5%, at 16 rows -1.5 to -4.5%, at 32-512 rows -0.3 to -2%; A = M bit for
# bit.
# Rule: norm_rope_attention_kernel on by default if A is >= 1.0% faster than M at 1 and at 16 rows in all three
# comparisons (M1-A1, A1-M2, M2-A2), not > 0.3% slower at 32, 128 or 512 rows in all three, and its check equal
# (codes, caches, hidden, state); else it stays off.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
A=$M+norm-rope-attention
talker_order 1.7B 1,16 "$M,$A,$M,$A" ab
talker_order 1.7B 32,128,512 "$M,$A,$M,$A" ab_large
