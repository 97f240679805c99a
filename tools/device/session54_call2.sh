# Run 191 (session 54, call 2) = next_one_gpu_3.sh as written in session 53 (M/P/K at 32, 128 and 512 rows, 1.7B)
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~4 minutes), after next_one_gpu_2.sh: its A/B/C at the stack's step
# sizes, 1.7B at 32, 128 and 512 rows, M, P, K, M, P, K in one process (M today's defaults, P +projected-lookups, K P+
# lookup-kernels; see next_one_gpu_2.sh for why). At 512 rows the 14 GEMMs a step that P removes run on cuBLAS
# (~2 GFLOP each) and the 30 PyTorch lookups and adds K removes move ~90 MB.
# Prediction: P against M at 32 rows -0.5 to -2%, K -1 to -3%; both at 128 rows -0.3 to -1.5%, at 512 rows -0.2 to
# -1%.
# Rule: next_one_gpu_2.sh's (these rows may not be > 0.3% slower in all three M/K, or M/P, comparisons).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
P=$M+projected-lookups
K=$P+lookup-kernels
talker_order 1.7B 32,128,512 "$M,$P,$K,$M,$P,$K" abc_large
