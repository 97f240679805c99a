# Session 34, call 1 (run 128). One-GPU call (nvidia-h200, ~6 minutes): the codec's `history_swap_kernel` (session 33, built, off): each stateful
# conv's history into its buffer and its new history back by one launch (`swap_history`) instead of history_kernel's
# two: 21 kernels fewer a step (the CPU census: 246 -> 225 at 1x1). Checked, A/B'd as a graph step (the guard at
# 128x15), then over realistic ticks as run 125 decided window_pair_kernel.
# Prediction: history_swap_kernel_vs_copies and _cl bitwise (fp32, bf16); graph step 1x1 -1 to -4%, 128x15 -0.3 to
# +0.3%; ticks of 40 / 81 / 128 rows -0.4 to -1.5%, -0.4 to -1.5%, -0.2 to -1% (window_pair_kernel's 32 launches
# gave -1.2 / -1.4 / -0.7% in run 125).
# Rule, written before the run (run 125's): on by default only if the checks are bitwise (both here, and the ticks'
# audio and state equal), its ticks are shorter at 40, 81 and 128 rows with 81 rows at least 0.5% shorter, and its
# 128x15 graph step is at most 0.5% longer.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --fast-sine --window-kernel --history-kernel --history-swap-kernel \
    --modes fused-cl,fused-cl+graph --batches 16 --chunks 2 --cudnn-benchmark --min-seconds 0.2 \
    --out $OUT/checks.json 2>&1 | grep -E '"check": "(history_swap|graph_vs|channels_last_graph)|"error"' | cut -c1-400
stamp checks
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel --window-pair-kernel"
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 15 --cudnn-benchmark \
    --min-seconds 0.5 --no-checks --ab history_swap_kernel --ab-rounds 6 --out $OUT/ab128.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 1 --chunks 1 --cudnn-benchmark \
    --min-seconds 0.3 --no-checks --ab history_swap_kernel --ab-rounds 6 --out $OUT/ab1.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab
python3 tools/bench_codec_ticks.py --ab history_swap_kernel --rows 40 81 128 --ticks 3 --iters 5 --ab-rounds 6 \
    --out $OUT/ticks_ab.json 2>&1 | grep -v '^{"ab"' | cut -c1-400
stamp ticks
