# Run 146 (session 38, call 2): next_one_gpu.sh after its mode was accepted (run 145 stopped at 'unknown modes').
# One-GPU call (nvidia-h200, ~5 minutes), any time: the talker setting fused_draws (the talker's draw with its
# processors and the slots' counters in one kernel, every draw reading its sampling parameters at the row's slot; off
# by default) A/B'd in one process, the way run 136 A/B'd the RoPE tables: both modes on the same talker (the same
# weights, so the same GEMMs), one process per order.
# Why: run 143 A/B'd the same code by trees (separate processes): 512 rows -1.4 / -1.4%, 128 rows -1.0 / -0.9%, but
# 1 row +2.8 / +2.7%; run 144 had the 1-row step the other way round and the touched kernels no slower on the GPU,
# the 1-row step moving between processes by up to ~0.2 ms. In one process that spread is the same for both modes.
# Checks in each process: graph = eager padded with it; with and without it, 2 eager steps of 64 slots (greedy and
# sampling mixed): codes, caches, hidden state and the slots' counters and histories equal to the bit.
# Prediction: with fused_draws, 512 rows -1.0 to -1.8%, 128 rows -0.5 to -1.5%, 1 row -3% to +1%; every check bitwise.
# Rule, written before the run: fused_draws goes on by default (config default, help, internals, deploy comment,
# the defaults test, benchmarks and perf-notes) if every check is bitwise and, in both orders, no batch is more than
# 0.3% slower with it; otherwise it stays off.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write
order() {  # MODES TAG: one process timing MODES in their order
    python3 tools/bench_talker_step.py --models 1.7B --modes "$1" --batches 1,128,512 --max-len 512 --check-steps 2 \
        --iters 50 --json $OUT/talker_$2.json 2>&1 \
        | grep -E "graph vs eager|fused draws vs|batch [0-9]+:|Error|error|unknown|Traceback" | cut -c1-300
    stamp "$2"
}
order "$M,$M+fused-draws" off_first
order "$M+fused-draws,$M" on_first
