# Session 36 call 1 (run 136).
# One-GPU call (nvidia-h200, ~5 minutes), any time: the talker's RoPE made once where it can be (session 35, both
# on: each stack's frequencies kept per device, `Decoder.keep_rope_frequencies`, and the code predictor's tables made
# once by the runner for its fixed positions, `TalkerRunner(predictor_rope_table=True)`: 138 launches fewer a 1.7B
# decode step by tools/census_talker_step.py, 1,312 -> 1,174; the same bits on the CPU) against both made by every
# forward (`+rope-per-forward`, as before), in one process, twice in opposite orders (a mode's graphs are captured
# after the previous mode's: the order is the one thing the two processes change). The +rope-per-forward mode also
# checks the predictor's table against per-pass tables to the bit on the GPU.
# Why: run 134 (after session 34's RoPE tables): 6.726 / 11.730 ms at 128 / 512 rows.
# Prediction: kept shorter by 1.5-5% at 1 row, 1-4% at 128, 0.5-2.5% at 512 (138 small kernels of ~1-3 us each in a
# replay); every check bitwise (graph = eager padded; the fused kernels against what they replace; table vs per pass).
# Rule, written before the run: kept stays on if, in both orders, no batch is more than 0.3% slower with it kept;
# otherwise both go back to being made by every forward.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write
for order in "$M,$M+rope-per-forward" "$M+rope-per-forward,$M"; do
    python3 tools/bench_talker_step.py --models 1.7B --modes "$order" --batches 1,128,512 --max-len 512 \
        --check-steps 2 --iters 50 --json $OUT/talker_rope_$(echo $order | cut -c1-60 | tr ',+' '__').json 2>&1 \
        | grep -E "graph vs eager|batch [0-9]+:|Error|error" | cut -c1-300
    stamp "order $order"
done
