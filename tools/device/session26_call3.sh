# Session 26 call 3 (nvidia-h200, ~7 minutes): the residual SnakeBeta kernel (`residual_snake_kernel`, built this
# session) against today's default, then every check with it on, then it in the stack.
# Why: run 99 (call 1) profiled the 128x15 eager step: SnakeBeta 16.9% and the residual adds 9.6% of 33.6 ms of CUDA
# time, both at ~4 TB/s (memory-bound). 12 of the vocoder's 29 SnakeBetas read a residual unit's output that the
# add has just written; with the switch the add writes the SnakeBeta too, saving one read of ~4.5 GB per 128x15 step
# (~1.1 ms at 4 TB/s).
# Predictions (fused-cl+graph, 128 rows, medians of 4 alternating rounds in one process): base 128x2 6.9-7.3 ms,
# 128x15 36.0-37.5 ms; the switch 128x15 -2 to -4%, 128x2 -1 to -3%. Checks: all pass, the switch bitwise equal to
# the separate kernels in fp32 and bf16 (waveforms and state). Stack with it on (R): 512 streams 1,380-1,450
# audio-s/s with no gap; 800 at most 0.5% gapped.
# Rule, written before the run: `residual_snake_kernel` turns on by default if every check of the checks run passes
# (the switch's check bitwise) and its 128x15 median is >= 1.5% shorter than the base's, with its 128x2 median no more
# than 0.5% longer. The stack levels are for the record.
source tools/device/setup.sh
stamp start
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels"
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 2 15 --cudnn-benchmark \
    --min-seconds 0.5 --no-checks --ab residual_snake_kernel --ab-rounds 4 --out $OUT/ab.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab
python3 tools/bench_codec.py $F --residual-snake-kernel --modes fused-cl,fused-cl+graph --batches 128 --chunks 2 \
    --cudnn-benchmark --min-seconds 0.3 --out $OUT/checks.json 2>&1 | grep -E '"check"|"error"' | cut -c1-400
stamp checks
env OMNI_CODEC_RESIDUAL_SNAKE_KERNEL=1 $S --concurrency 512 800 --level-timeout 150 --out /tmp/R; save R
