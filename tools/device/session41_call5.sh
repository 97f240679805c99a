# Session 41 call 5 = run 166 (nvidia-h200): tools/device/next_one_gpu_2.sh as it ran.
# One-GPU call (nvidia-h200, ~4 minutes), any time: the row kernel at 2 and 4 rows with cold weights (its launch there
# is still LAUNCH, from run 153's warm-L2 timings), and the dot kernel at 32 rows with 64- and 128-feature blocks (the
# talker's [12288, 2048] gate_up stays on cuBLAS past 16 rows; run 162's 32-row sweep had no 64-feature launch with
# 128-wide chunks, which is dot_launch_for's for it).
# Why: run 163 showed row_launch_for (fitted at 1 row) 1.0-3.7% slower on the 2-4 row steps; LAUNCH may not be the
# fastest there either.
# Prediction: at 2 and 4 rows LAUNCH within 5% of each weight's fastest row-kernel launch on at least 10 of the 13
# weights (if not, a launch by shape at 2-4 rows is the next step A/B); at 32 rows on gate_up the fastest 64- or
# 128-feature dot launch within +-5% of cuBLAS (if quicker by > 3%, dot_rows_for gives it 32 rows, a step A/B at 32).
source tools/device/setup.sh
stamp start
python3 tools/bench_skinny_linear.py --rows 2 4 --block-n 2 4 8 --block-k 512 1024 2048 --num-warps 1 2 4 \
    --out $OUT/skinny_2_4.json > $OUT/skinny_2_4.txt 2>&1
grep -E "Traceback" $OUT/skinny_2_4.txt | cut -c1-300
sed -n '/| weight | rows | kernel up to/,$p' $OUT/skinny_2_4.txt | cut -c1-60,100-230
stamp rows_2_4
python3 tools/bench_skinny_linear.py --rows 32 --block-n --dot-block-n 64 128 --dot-block-k 64 128 256 \
    --dot-stages 3 4 --out $OUT/skinny_32_wide.json > $OUT/skinny_32_wide.txt 2>&1
grep -E "Traceback" $OUT/skinny_32_wide.txt | cut -c1-300
sed -n '/| weight | rows | kernel up to/,$p' $OUT/skinny_32_wide.txt | cut -c1-60,100-230
stamp rows_32_wide
