# Run 153 (session 39, call 2): next_one_gpu.sh as it ran.
# One-GPU call (nvidia-h200, ~8 minutes), any time: kernels/skinny_linear.py with a program per (8 features, row),
# timed alone against cuBLAS, then the talker setting skinny_linear A/B'd in one process, both orders.
# Why: run 152 timed the first version (all rows in one program): the 1-row 1.7B step 5.24 / 5.28 -> 4.69 / 4.66 ms,
# but 2 rows +4 / +2%, 4 rows +21 / +20%, 8 rows +63 / +61% (its [rows, 8, BLOCK_K] product a chunk at a time). Now
# each row is a program of its own (the 1-row program; the weights of a feature block read from L2 after the first).
# Part 1 (tools/bench_skinny_linear.py): every GEMM weight of the fused 1.7B talker and predictor at 1, 2, 4, 8 rows,
# block_n {2, 4, 8, 16} x block_k {256, 512, 1024} x warps {2, 4}, against F.linear: informs the next launch setting
# and which other weights are slow at a few rows; decides nothing today.
# Part 2 prediction: 1 row -10 to -12% (as run 152); 2 rows -8 to -11%; 4 rows -5 to -10%; 8 rows -3 to +3% (cuBLAS
# picks better kernels at 8 rows: the 8-row step was shorter than the 1-row one in run 152); 128 / 512 within 0.3%.
# Rule, written before the run (as for run 152): skinny_linear goes on by default (config default and help,
# internals, deploy comment, the defaults test in test_talker_service.py, benchmarks, perf-notes, README) if graph =
# eager holds, the kernel's relative error is at most twice cuBLAS's, and in both orders every batch of 1-8 rows is
# >= 2% shorter and 128 / 512 rows no more than 0.3% slower; otherwise it stays off.
source tools/device/setup.sh
stamp start
python3 tools/bench_skinny_linear.py --rows 1 2 4 8 --out $OUT/skinny_linear.json > /tmp/skinny.txt 2>&1
grep -E "^shapes|^default|Error|error|Traceback" /tmp/skinny.txt | cut -c1-400
sed -n '/| weight | rows | cuBLAS us/,$p' /tmp/skinny.txt
stamp skinny_linear
M=fused+sampler+kv-write+add-norm+norm-rope-write
order() {  # MODES TAG: one process timing MODES in their order
    python3 tools/bench_talker_step.py --models 1.7B --modes "$1" --batches 1,2,4,8,128,512 --max-len 512 \
        --check-steps 2 --iters 50 --profile-replays 1 --json $OUT/talker_$2.json 2>&1 \
        | grep -E "graph vs eager|skinny linear vs|batch [0-9]+:|replays at|Error|error|unknown|Traceback" \
        | cut -c1-300
    stamp "$2"
}
order "$M,$M+skinny-linear" off_first
order "$M+skinny-linear,$M" on_first
