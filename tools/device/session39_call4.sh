# Run 155 (session 39, call 4): next_one_gpu.sh as it ran.
# One-GPU call (nvidia-h200, ~5 minutes), any time: the talker setting fused_draws (off) A/B'd in one process again,
# both orders, now on top of skinny_linear (on by default since run 154), with the same checks and rule as run 146.
# Why: run 146 (both orders): 512 rows -1.4 / -1.1%, 128 rows -0.8 / -1.0%, 1 row +3.1 / +2.5%; runs 147-151 put the
# 1-row cost in the code predictor's o_proj GEMM on cuBLAS (two speeds from one capture to the next, slow 7 of 7 times
# with the indexed draws), which skinny_linear now replaces at 1-4 rows.
# Checks in each process: graph = eager padded with it; with and without it, 2 eager steps of 64 slots (greedy and
# sampling mixed): codes, caches, hidden state and the slots' counters and histories equal to the bit.
# Prediction: 512 rows -1.0 to -1.8%, 128 rows -0.5 to -1.5%, 1 row -2% to +1%; every check bitwise.
# Rule (run 146's, unchanged): fused_draws goes on by default (config default, help, internals, deploy comment, the
# defaults test, benchmarks and perf-notes) if every check is bitwise and, in both orders, no batch is more than 0.3%
# slower with it; otherwise it stays off.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+skinny-linear
order() {  # MODES TAG: one process timing MODES in their order
    python3 tools/bench_talker_step.py --models 1.7B --modes "$1" --batches 1,128,512 --max-len 512 --check-steps 2 \
        --iters 50 --json $OUT/talker_$2.json 2>&1 \
        | grep -E "graph vs eager|fused draws vs|batch [0-9]+:|Error|error|unknown|Traceback" | cut -c1-300
    stamp "$2"
}
order "$M,$M+fused-draws" off_first
order "$M+fused-draws,$M" on_first
