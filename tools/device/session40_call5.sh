# Session 40 call 5 (run 161). One-GPU call (nvidia-h200, ~3 minutes): the dot kernel of kernels/skinny_linear.py
# against cuBLAS at 16, 32, 64 and 128 rows (the kernel now pads the rows to a power of 2 up to KERNEL_MAX_ROWS), on
# every 1.7B GEMM weight, cold (weights taken in turn from 256 MB of copies). Decides nothing today: whether the
# talker's GEMMs should take the dot kernel above 16 rows (its step at 128 rows is 6.33 ms against 4.91 at 16, run
# 160; the weights are read once a step at any row count, so the difference is not their bytes).
# Prediction: the fastest dot launch's time grows by at most 30% from 16 to 64 rows; at 32 and 64 rows it is within
# +-10% of cuBLAS on the talker's weights and faster on the predictor's; at 128 rows cuBLAS is faster on most.
source tools/device/setup.sh
stamp start
timeout 200 python3 tools/bench_skinny_linear.py --rows 16 32 64 128 --block-n \
    --dot-block-n 16 32 64 128 --dot-block-k 64 128 256 --dot-warps 4 8 --dot-stages 3 \
    --out $OUT/skinny_linear.json > $OUT/skinny.txt 2>&1
grep -E "^shapes|^default|Traceback" $OUT/skinny.txt | cut -c1-300
grep -c "error:" $OUT/skinny.txt
sed -n '/| weight | rows | kernel up to/,$p' $OUT/skinny.txt
stamp skinny_linear
