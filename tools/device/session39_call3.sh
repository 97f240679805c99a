# Run 154 (session 39, call 3): next_one_gpu.sh as it ran.
# One-GPU call (nvidia-h200, ~5 minutes), any time: the talker setting skinny_linear, now every GEMM of the step at
# one row (and up to 4 rows for weights of <= 1024 outputs: the predictor's o_proj, down_proj, small-to-MTP), with the
# launch run 153 found best (block_n 4, block_k 1024, 2 warps), A/B'd in one process, both orders.
# Why: run 153 (tools/bench_skinny_linear.py) timed the kernel against cuBLAS on every 1.7B GEMM weight: at one row it
# took 1.1-5.1x less time on each (the step's GEMMs 3,174 -> 1,615 us by call counts); at 2-4 rows it won only on the
# N = 1024 weights, at 8 rows on none. Its A/B of the predictor's o_proj / small-to-MTP at <= 8 rows: 1 row -13 / -11%,
# 2 rows -8.5 / -10%, 4 rows -9.9 / -8.5%, 8 rows +4.3 / +2.9% (rule failed: stays off); 128 rows +0.5 / -0.5%
# between graphs of the same launches (the kernel is not used there).
# Prediction: 1 row -22 to -30% (5.05-5.28 ms -> 3.6-4.0); 2 rows -10 to -13%; 4 rows -11 to -15%; 8, 128 and 512 rows
# unchanged (within 0.5%: the same launches); the kernel's error no larger than cuBLAS's.
# Rule, written before the run: skinny_linear goes on by default (config default and help, internals, deploy
# comment, the defaults test in test_talker_service.py, benchmarks, perf-notes, README) if graph = eager holds, the
# kernel's relative error is at most twice cuBLAS's, and in both orders 1, 2 and 4 rows are each >= 2% shorter and
# 8, 128 and 512 rows no more than 0.5% slower (0.5: run 153's spread between graphs of the same launches);
# otherwise it stays off.
source tools/device/setup.sh
stamp start
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
