# One-GPU call (nvidia-h200, ~2 minutes), any time: the dot kernel at 16 and 32 rows with run 159's fastest settings
# (512-wide K chunks, 4 stages), which run 161's sweep of 16-128 rows lacked.
# Why: run 161 had the dot kernel within +-2% of cuBLAS at 32 rows on about half the weights, but without the
# settings that were fastest at 16 rows in run 159 (there the talker's down_proj 10.40 us against 14.27 in run 161).
# If it beats cuBLAS at 32 rows, the talker's GEMMs could take it to 32 rows (an A/B at 32 rows would decide).
# Prediction: at 32 rows the fastest launch within 0-8% less time than cuBLAS on 8 or more of the 12 weights.
source tools/device/setup.sh
stamp start
python3 tools/bench_skinny_linear.py --rows 16 32 --block-n --dot-block-n 16 32 64 --dot-block-k 256 512 \
    --dot-stages 3 4 --out $OUT/skinny_linear.json > $OUT/skinny.txt 2>&1
grep -E "^shapes|^default|Traceback" $OUT/skinny.txt | cut -c1-300
sed -n '/| weight | rows | kernel up to/,$p' $OUT/skinny.txt
stamp skinny_linear
