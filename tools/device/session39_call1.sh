# Run 152 (session 39, call 1): next_one_gpu.sh as it ran.
# One-GPU call (nvidia-h200, ~6 minutes), any time: the talker setting skinny_linear (the code predictor's attention
# output projections and its small-to-MTP projection through kernels/skinny_linear.py at <= 8 rows; off by default)
# A/B'd in one process, both orders, with each capture's 1-row replays profiled.
# Why: runs 148-151 (session 38) put ~0.9 ms of the 5.0-5.2 ms 1-row 1.7B step in two cuBLAS kernels for the
# predictor's [rows, 2048] x [1024, 2048]^T: nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN (75 calls, 9.5 or ~12 us each
# from one capture to the next) and its bias twin (15 calls, ~12 us): 16 thread blocks for a 4 MB weight. The kernel
# gives 128 programs of 8 output features, no split of K, fp32 sums (CPU tests: within one bf16 step of the exact sums).
# Checks: graph = eager padded with it; the rewired Linears at 1-8 rows against the fp32 product, through the kernel
# and through cuBLAS (relative max error, outputs differing).
# Prediction: at 1 row the 90 calls ~3-5 us each: the step 0.5-0.8 ms shorter (-10 to -15%); 2, 4 and 8 rows -6 to
# -14%; 128 and 512 rows unchanged (within 0.3%: the kernel is not used there); the kernel's error no larger than
# cuBLAS's (both one rounding of fp32 sums).
# Rule, written before the run: skinny_linear goes on by default (config default and help, internals, deploy
# comment, the defaults test in test_talker_service.py, benchmarks, perf-notes, README) if graph = eager holds, the
# kernel's relative error is at most twice cuBLAS's, and in both orders every batch of 1-8 rows is >= 2% shorter
# and 128 / 512 rows no more than 0.3% slower; otherwise it stays off.
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
