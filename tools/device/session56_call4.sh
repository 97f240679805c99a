# Run 198 (session 56, call 4) = next_one_gpu_2.sh as written (the step write kernel's second A/B).
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~7-8 minutes), any time: the step write kernel's A/B again (W:
# +step-writes, built in session 55) against today's defaults (M: with session 56's step RoPE tables, and its untimed
# folds: the draw counter in the step input kernel, the text vector's add in frame_sum, decode attention's rows per
# slot, the text projection's SiLU as a kernel), in the order M, W, M, W in one process, 1.7B, at 1 and 16 rows, then
# at 32, 128 and 512 rows, with the bench's checks (W against the PyTorch writes, bit for bit; graph against eager).
# Why again: runs 193-194 timed W against S (the step input kernel alone): faster in all nine comparisons, but under
# its rule's 0.2% in two of three at 16 rows (-0.16%, -0.07%), so it stayed off. Since then the step's other PyTorch
# kernels went into kernels (census: 16 -> 8), and the 8 left are exactly W's writes: with W the step runs no PyTorch
# kernel, so every launch of it can wait for the one ahead and let the next one in early. This is W's second A/B;
# its first failed the rule, and both are reported.
# Prediction: W against M 1 row -0.2 to -0.5%, 16 rows -0.2 to -0.5%, 32-512 rows -0.05 to -0.3%; W = M bit for bit.
# Rule (the first A/B's): step_write_kernel on by default if W is >= 0.2% faster than M at 1 and at 16 rows in all
# three comparisons (M1-W1, W1-M2, M2-W2), not > 0.3% slower at 32, 128 or 512 rows in all three, and its check equal
# (codes, caches, hidden, state); else it stays off. (Run 195: M against itself 0.18% apart at 1 and at 16 rows, so
# a 0.2% rule can fail on noise alone.)
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
W=$M+step-writes
talker_order 1.7B 1,16 "$M,$W,$M,$W" ab
talker_order 1.7B 32,128,512 "$M,$W,$M,$W" ab_large
