# Run 194 (session 55, call 2) = next_one_gpu_3.sh as written.
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~4 minutes), with or after next_one_gpu_2.sh: the step input kernel's
# A/B at 128 and 512 rows (M, S, M, S in one process, 1.7B; see next_one_gpu_2.sh for why and the rule). Programmatic
# launch is off above 64 rows (programmatic_launch_max_rows), so a PyTorch kernel there costs its launch gap only.
# Prediction: S against M 128 rows -0.2 to -0.6%, 512 rows -0.1 to -0.4%.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels
S=$M+step-inputs
talker_order 1.7B 128,512 "$M,$S,$M,$S" ab_large
