# Session 40 call 3 (run 159). One-GPU call (nvidia-h200, ~9 minutes): the dot kernel of kernels/skinny_linear.py
# (a program per 16 output features for all rows, tl.dot over rows padded to 16; LAUNCH_DOT a guess: block_n 16,
# block_k 256, 4 warps, 4 stages) at steps of 2-16 rows, A/B'd in one process, both orders; then the kernels alone
# against cuBLAS (dot launches swept) under a time limit.
# Why: with skinny_linear (run 154) the 1.7B step is 3.80-3.83 ms at 1 row but 4.49 at 2, 4.70 at 4 and 5.11-5.13 at 8
# rows: above 1 row (4 at N <= 1,024) cuBLAS runs, and the row kernel reads the weights again for each row.
# Prediction: 2 rows -4 to -11%, 4 rows -6 to -15%, 8 rows -8 to -18%; 16 rows -10 to +5%; 1 / 128 / 512 rows within
# 0.5% (the dot kernel is not used there).
# Rule, written before the run: the talker setting skinny_linear_dot goes on by default (config default and help, the
# defaults test, internals, deploy comment, benchmarks, perf-notes, README) if graph = eager holds, the kernels' error
# is at most twice cuBLAS's, and in both orders 2, 4 and 8 rows are each >= 2% shorter and 1, 128 and 512 rows no more
# than 0.5% slower. If 16 rows is more than 0.5% slower in both orders, the dot kernel stops at 8 rows (9-16 rows go
# to cuBLAS as today, so the 2-8 row figures stand for it). Otherwise it stays off.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear
talker_order 1.7B 1,2,4,8,16,128,512 "$M,$M+skinny-dot" off_first
talker_order 1.7B 1,2,4,8,16,128,512 "$M+skinny-dot,$M" on_first
timeout 170 python3 tools/bench_skinny_linear.py --rows 2 8 16 --block-n 4 --block-k 1024 --num-warps 2 \
    --dot-block-n 16 32 64 --dot-block-k 128 256 512 --dot-stages 3 4 --out $OUT/skinny_linear.json \
    > $OUT/skinny.txt 2>&1
grep -E "^shapes|^default|Error|error|Traceback" $OUT/skinny.txt | cut -c1-300
sed -n '/| weight | rows | kernel up to/,$p' $OUT/skinny.txt
grep -c "^| " $OUT/skinny.txt
stamp skinny_linear
