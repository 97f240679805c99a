# Session 31, call 3 (nvidia-h200, ~5 minutes): the transformer's residual adds in one kernel with the next RMSNorm
# (`add_norm_kernel`, built this session) against today's default (history_kernel on since run 117), and its checks.
# Why: run 118's census of a 1x1 replay (337 kernels) still has per layer a LayerScale multiply, a residual add and
# an RMSNorm per residual: 16 multiplies, 16 adds, 17 norms. add_rms_norm with the LayerScale does each residual's
# three in one (the talker's fused_add_norm): 32 kernels fewer a step, ~2.5-3 us each at small batches.
# Predictions (fused-cl+graph, medians of 4 alternating rounds in one process): 128x1 -2 to -5%, 128x2 -1.5 to -4%,
# 128x15 -0.2 to -1%; 1x1 -4 to -9%, 1x15 -3 to -8%. Checks: add_norm_kernel_vs_separate (over the fused
# transformer) bitwise in fp32 and bf16; graph_vs_eager passes with it on.
# Rule, written before the run: `add_norm_kernel` turns on by default if every check passes and no A/B median is
# longer than its base by more than 0.5%, with the 128x2 median at least 1% shorter.
source tools/device/setup.sh
stamp start
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel"
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 1 2 15 --cudnn-benchmark \
    --min-seconds 0.5 --no-checks --ab add_norm_kernel --ab-rounds 4 --out $OUT/ab128.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab128
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 1 --chunks 1 15 --cudnn-benchmark \
    --min-seconds 0.3 --no-checks --ab add_norm_kernel --ab-rounds 4 --out $OUT/ab1.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab1
python3 tools/bench_codec.py --fast-sine --transformer-kernels --history-kernel --add-norm-kernel \
    --modes fused-cl,fused-cl+graph --batches 16 --chunks 2 --cudnn-benchmark --min-seconds 0.2 \
    --out $OUT/checks.json 2>&1 | grep -E '"check"|"error"' | cut -c1-300
stamp checks
