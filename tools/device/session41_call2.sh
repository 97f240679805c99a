# Session 41 call 2 (run 163). One-GPU call (nvidia-h200, ~8 minutes): launches by the weight's shape (+by-shape:
# row_launch_for, dot_launch_for with split-K at K >= 2N) A/B'd on the 1.7B step at 1-16 rows, and the dot kernel up to
# 32 rows (+dot-32: dot_rows_for) at 32 rows, each in one process, both orders; first the dot kernel at 32 rows with
# and without split-K (kernel timings, cold weights).
# Why: run 162 (cold weights): at 1 row LAUNCH was 7-12% slower than the fastest on the K >= 2N weights, where 4 / 2048
# / 4 warps was within 1% of each weight's fastest; split-K 4 over 32-feature blocks took 9-12% less time than
# dot_launch_for's on both down_projs at 2-16 rows, 1-5% on the [1024, 2048] weights, and was slower on every other
# weight; at 32 rows the dot kernel beat cuBLAS on 11 of 13 weights (by 3-15% on the N <= 2048 or K <= 1024 ones).
# Predictions (run 162's per-call differences times the calls a step): +by-shape 1 row -105 us (-2.8%; range -1.5 to
# -3.5%), 8 rows -106 us (-2.2%), 16 rows -80 us (-1.6%), 2 and 4 rows -1 to -3% (row launches at 2-4 rows untimed);
# +dot-32 at 32 rows -209 us (-2 to -5%).
# Rules, written before the run: +by-shape goes on by default (a talker setting skinny_linear_by_shape, on) if graph =
# eager holds, the error is at most twice cuBLAS's, and in both orders no batch of 1-16 rows is more than 0.5% slower
# and at least two are >= 1% shorter; otherwise it stays off. +dot-32 goes on by default (setting skinny_linear_dot_32,
# on) if graph = eager, the error is at most twice cuBLAS's, and 32 rows is >= 1.5% shorter in both orders. If both go
# on and dot-32+by-shape is more than 0.5% slower than dot-32 at 32 rows in both orders, split-K stops at 16 rows.
source tools/device/setup.sh
stamp start
python3 tools/bench_skinny_linear.py --rows 32 --block-n --dot-block-n 16 32 --dot-block-k 128 512 --dot-stages 3 4 \
    --dot-split-k 1 4 --out $OUT/skinny_32.json > $OUT/skinny_32.txt 2>&1
grep -E "Traceback" $OUT/skinny_32.txt | cut -c1-300
sed -n '/| weight | rows | kernel up to/,$p' $OUT/skinny_32.txt | cut -c1-60,100-230
stamp skinny_32
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot
talker_order 1.7B 1,2,4,8,16 "$M,$M+by-shape" off_first
talker_order 1.7B 1,2,4,8,16 "$M+by-shape,$M" on_first
talker_order 1.7B 32 "$M,$M+dot-32,$M+dot-32+by-shape" d32_off_first
talker_order 1.7B 32 "$M+dot-32+by-shape,$M+dot-32,$M" d32_on_first
stamp end
