# Session 31, call 1 (nvidia-h200, ~6 minutes): the conv-history kernel (`history_kernel`, built this session)
# against today's default, its bitwise checks on the GPU (eager and graph), and its kernel count.
# Why: run 116 counted 439 CUDA kernels in a 1x1 codec replay (~2.8 us each, the replay's whole 1.2 ms) and ~126 of
# them in the 21 stateful convs' history bookkeeping (gather the rows, copy into [history | new], the end index as a
# multiply, an arange and an add, its gather, the index put at the end). copy_history does each conv in two kernels.
# Predictions: 1x1 replay 439 -> 330-350 kernels, 128x15 463 -> 355-375; 1x1 replay 1.19 -> 0.85-1.00 ms. A/B
# (fused-cl+graph, medians of 4 alternating rounds in one process): 128x1 -4 to -12%, 128x2 -3 to -8%, 128x15 -0.5
# to -2%; 1x1 -15 to -30%, 1x15 -5 to -20%. Checks: history_kernel_vs_copies (default vocoder) and _cl (channels-last)
# bitwise in fp32 and bf16, graph_vs_eager passes.
# Rule, written before the run: `history_kernel` turns on by default if every check passes and no A/B median is
# longer than its base by more than 0.5%, with the 128x2 median at least 1% shorter.
source tools/device/setup.sh
stamp start
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel"
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 1 2 15 --cudnn-benchmark \
    --min-seconds 0.5 --no-checks --ab history_kernel --ab-rounds 4 --out $OUT/ab128.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab128
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 1 --chunks 1 15 --cudnn-benchmark \
    --min-seconds 0.3 --no-checks --ab history_kernel --ab-rounds 4 --out $OUT/ab1.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab1
python3 tools/bench_codec.py $F --history-kernel --modes fused-cl,fused-cl+graph --batches 128 --chunks 2 \
    --cudnn-benchmark --min-seconds 0.3 --out $OUT/checks.json 2>&1 | grep -E '"check"|"error"' | cut -c1-300
stamp checks
for on in 0 1; do
    OMNI_CODEC_HISTORY_KERNEL=$on python3 tools/bench_codec_ticks.py --kernels 1x1 128x15 --rows 81 --ticks 1 \
        --iters 5 --out $OUT/kernels_$on.json 2>&1 | grep -E '^\{"(device|kernels|check)' | cut -c1-700 \
        || echo "TOOL FAILED"
    stamp "kernels history_kernel=$on"
done
