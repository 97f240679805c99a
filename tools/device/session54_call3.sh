# Run 192 (session 54, call 3) = on an H100 next_one_gpu_h100.sh, on an H200 next_one_gpu.sh, each as written but with
# the talker settings projected_lookups and lookup_kernels on (exported: bench_stack's services inherit the
# environment), which runs 190-191 put on by default by session 53's rule (K 2.5-3.0% faster than M at 1 and 16 rows,
# 1.3-2.7% at 32-512 rows, H100). Predictions as in those scripts, plus 1-3% for the two settings.
export OMNI_TALKER_PROJECTED_LOOKUPS=1 OMNI_TALKER_LOOKUP_KERNELS=1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then
    bash tools/device/next_one_gpu_h100.sh
else
    bash tools/device/next_one_gpu.sh
fi
