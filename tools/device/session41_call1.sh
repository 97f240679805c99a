# Session 41 call 1 = run 162 (nvidia-h200): tools/device/next_one_gpu_2.sh as it ran.
# One-GPU call (nvidia-h200, ~5 minutes), any time: the dot kernel at 16 and 32 rows with run 159's fastest settings
# (512-wide K chunks, 4 stages), which run 161's sweep of 16-128 rows lacked; the row kernel at 1 row, cold; the dot
# kernel with K split over 2-8 programs a feature block (split_k, built in session 40, never run on a GPU).
# Why: run 161 had the dot kernel within +-2% of cuBLAS at 32 rows on about half the weights, but without the
# settings that were fastest at 16 rows in run 159 (there the talker's down_proj 10.40 us against 14.27 in run 161).
# If it beats cuBLAS at 32 rows, the talker's GEMMs could take it to 32 rows (an A/B at 32 rows would decide).
# Prediction: at 32 rows the fastest launch within 0-8% less time than cuBLAS on 8 or more of the 12 weights.
# Part 2: LAUNCH (block_n 4, block_k 1,024, 2 warps) came from run 153's 1-row timings of one weight replayed warm in
# L2; the step reads the weights from HBM (~2.4 TB/s on average, run 154). Prediction: cold, LAUNCH within 10% of the
# fastest row-kernel setting on every weight; if not, the launch by weight (as dot_launch_for) is the next A/B.
source tools/device/setup.sh
stamp start
python3 tools/bench_skinny_linear.py --rows 16 32 --block-n --dot-block-n 16 32 64 --dot-block-k 256 512 \
    --dot-stages 3 4 --out $OUT/skinny_linear.json > $OUT/skinny.txt 2>&1
grep -E "^shapes|^default|Traceback" $OUT/skinny.txt | cut -c1-300
sed -n '/| weight | rows | kernel up to/,$p' $OUT/skinny.txt
stamp skinny_linear
python3 tools/bench_skinny_linear.py --rows 1 --block-n 2 4 8 16 --block-k 512 1024 2048 --num-warps 1 2 4 \
    --out $OUT/skinny_linear_1row.json > $OUT/skinny_1row.txt 2>&1
grep -E "Traceback" $OUT/skinny_1row.txt | cut -c1-300
sed -n '/| weight | rows | kernel up to/,$p' $OUT/skinny_1row.txt
stamp one_row
# Part 3: split_k. On weights of N <= 2,048 the dot kernel has 64-128 programs and read 0.8-1.5 TB/s (run 159).
# Prediction: every check's error within 2x cuBLAS's (a wrong ticket or a stale share would show as a large error);
# on those weights the fastest split_k > 1 takes 15-40% less time than split_k 1 at 8 and 16 rows; on the wider
# weights within 5% of split_k 1. If so, dot_launch_for by N with split_k is the next step A/B.
python3 tools/bench_skinny_linear.py --rows 2 8 16 --block-n --dot-block-n 16 32 --dot-block-k 128 256 512 \
    --dot-stages 3 4 --dot-split-k 1 2 4 8 --out $OUT/skinny_linear_split.json > $OUT/skinny_split.txt 2>&1
grep -E "Traceback" $OUT/skinny_split.txt | cut -c1-300
grep -c "error:" $OUT/skinny_split.txt
sed -n '/| weight | rows | kernel up to/,$p' $OUT/skinny_split.txt
python3 -c "import json; r = json.load(open('$OUT/skinny_linear_split.json'))['rows']; \
print('largest error / cuBLAS error:', max(x['rel_err'] / x['cublas_rel_err'] for x in r))"
stamp split_k
