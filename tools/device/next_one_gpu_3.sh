# One-GPU call (nvidia-h200, ~5 minutes), any time: the talker's RoPE frequencies kept per device (session 35,
# `Decoder.keep_rope_frequencies`, on: 6 ops fewer a forward, 96 a decode step by
# tools/census_talker_step.py, the same bits on the CPU)
# against made anew by every forward (`+rope-per-forward`, as before), both in one process, twice in opposite orders
# (a mode's graphs are captured after the previous mode's: the order is the one thing the two processes change).
# Why: run 109 counted ~1,389 kernels in a 512-row eager step, ~190 of them RoPE tables before session 34; session 34
# took 64 out (run 134 after it: 6.726 / 11.730 ms at 128 / 512 rows, another machine than run 131's 6.794 / 11.788).
# Prediction: kept shorter by 0.5-2% at 1 and 128 rows, 0.2-1% at 512; every check bitwise (graph = eager padded;
# the fused kernels against what they replace).
# Rule, written before the run: kept stays on if, in both orders, no batch is more than 0.3% slower with it kept;
# otherwise the frequencies go back to being made by every forward.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write
for order in "$M,$M+rope-per-forward" "$M+rope-per-forward,$M"; do
    python3 tools/bench_talker_step.py --models 1.7B --modes "$order" --batches 1,128,512 --max-len 512 \
        --check-steps 2 --iters 50 --json $OUT/talker_rope_$(echo $order | cut -c1-60 | tr ',+' '__').json 2>&1 \
        | grep -E "graph vs eager|batch [0-9]+:|Error|error" | cut -c1-300
    stamp "order $order"
done
