# Session 32, call 3 (run 122). One-GPU call (nvidia-h200, ~4 minutes): the codec's `window_pair_kernel` (a layer's
# K and V windows by one launch each way: concat_windows builds both [past | new] buffers, copy_windows(pair=) keeps
# both new windows; 6 -> 2 kernels a layer, 32 fewer a step), its bitwise checks and a 6-round A/B against today's
# defaults (add_norm_kernel on since run 120).
# Why: run 120's add_norm_kernel removed 32 kernels too: 1x1 -3.7%, 128x2 -2.5%, 128x15 +0.2%.
# Prediction: window_pair_kernel_vs_copies and _fused bitwise in fp32 and bf16; 1x1 -3 to -6%, 1x15 -3 to -6%,
# 128x1 -1 to -4%, 128x2 -1 to -3%, 128x15 -0.5 to +0.3%.
# Rule, written before the run: on by default only if every check passes, no median is more than 0.5% longer than
# its base, and 128x2 is at least 1% shorter. Otherwise it stays off and the note says so.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --fast-sine --transformer-kernels --window-kernel --window-pair-kernel \
    --modes fused-cl,fused-cl+graph --batches 16 --chunks 2 --cudnn-benchmark --min-seconds 0.2 \
    --out $OUT/checks.json 2>&1 | grep -E '"check": "(window_pair|graph_vs|channels_last_graph)|"error"' | cut -c1-400
stamp checks
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel"
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 1 2 15 --cudnn-benchmark \
    --min-seconds 0.5 --no-checks --ab window_pair_kernel --ab-rounds 6 --out $OUT/ab128.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab128
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 1 --chunks 1 15 --cudnn-benchmark \
    --min-seconds 0.3 --no-checks --ab window_pair_kernel --ab-rounds 6 --out $OUT/ab1.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab1
