# Run 196 (session 56, call 2) = next_one_gpu_3.sh as written.
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~5 minutes), with or after next_one_gpu_2.sh: the step RoPE tables'
# A/B at 32, 128 and 512 rows (M, R, M, R in one process, 1.7B; see next_one_gpu_2.sh for why, the prediction and the
# rule). Programmatic launch stops at 64 rows (pdl-to-64), so at 128 and 512 rows no kernel launches early and what is
# left is the PyTorch kernels' own time.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs
R=$M+step-rope-tables
talker_order 1.7B 32,128,512 "$M,$R,$M,$R" ab_large
