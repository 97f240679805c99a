# Session 33, call 1 (run 125). One-GPU call (nvidia-h200, ~5 minutes): the codec's new `qk_rope_kernel` (RoPE of a
# layer's q and k by one launch over the q|k columns of the fused projection: 8 kernels fewer a step) checked and
# A/B'd as a graph step; then both launch-saving switches (it and session 32's window_pair_kernel) A/B'd over
# realistic ticks (bench_codec_ticks --ab, new): what the service replays at 512 streams is ticks of ~40-128 rows of
# mixed chunk lengths split over several replays, each paying the launches, not one 128x2 step.
# Prediction: qk_rope_kernel_vs_apart bitwise (fp32, bf16); graph step 1x1 -0.5 to -2%, 128x2 -1 to +0.5%, 128x15
# -0.3 to +0.3%. Ticks (median of 6 rounds, 3 compositions per row count, 62% of rows 15 frames): window_pair_kernel
# 40 rows -1 to -3%, 81 rows -0.5 to -2%, 128 rows -0.3 to -1.5%; qk_rope_kernel a quarter of that (-0.1 to -0.7%).
# Rule, written before the run: a switch goes on by default only if its GPU checks are bitwise (both here, and the
# ticks' audio and state equal), its tick A/B is shorter at 40, 81 and 128 rows with 81 rows at least 0.5% shorter,
# and its 128x15 graph step (run 124 for window_pair_kernel: +0.4%; here for qk_rope_kernel) is at most 0.5% longer.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --fast-sine --transformer-kernels --window-kernel --qk-rope-kernel \
    --modes fused-cl,fused-cl+graph --batches 16 --chunks 2 --cudnn-benchmark --min-seconds 0.2 \
    --out $OUT/checks.json 2>&1 | grep -E '"check": "(qk_rope|graph_vs|channels_last_graph)|"error"' | cut -c1-400
stamp checks
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel"
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 2 15 --cudnn-benchmark \
    --min-seconds 0.5 --no-checks --ab qk_rope_kernel --ab-rounds 6 --out $OUT/ab128.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab128
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 1 --chunks 1 --cudnn-benchmark \
    --min-seconds 0.3 --no-checks --ab qk_rope_kernel --ab-rounds 6 --out $OUT/ab1.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab1
python3 tools/bench_codec_ticks.py --ab window_pair_kernel --ab qk_rope_kernel --rows 40 81 128 --ticks 3 \
    --iters 5 --ab-rounds 6 --out $OUT/ticks_ab.json 2>&1 | grep -v "^{\"ab\"" | cut -c1-400
stamp ticks
