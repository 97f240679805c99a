# Session 32, call 5 (run 124). One-GPU call (nvidia-h200, ~4 minutes): `window_pair_kernel` again after a change to
# concat_windows: the past window and the new positions each by a loop of their own, instead of one loop whose every
# tile issued two masked loads (the state's and the new tensor's) and picked between them.
# Why: run 122 had it bitwise and 1x1 -6.4%, 1x15 -4.8%, 128x1 -0.8%, but 128x2 +1.15% (rule not met; the 128x2
# rounds spread 6.16-6.79 ms against the base's 6.25-6.58).
# Prediction: checks bitwise; 1x1 -5 to -7%, 1x15 -4 to -6%, 128x1 -2 to +0.5%, 128x2 -2 to +1%, 128x15 -0.5 to +0.5%.
# Rule, written before the run (as run 122's): on by default only if every check passes, no median is more than 0.5%
# longer than its base, and 128x2 is at least 1% shorter. Otherwise it stays off and the note says so; no third run
# without another change.
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
