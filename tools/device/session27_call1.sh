# Session 27 call 1: next_one_gpu.sh as it stood at the end of session 26, unchanged.
# Next one-GPU call (nvidia-h200, ~8 minutes): the unit-tail GEMM (`unit_tail_kernel`, built in session 26 after
# the runs, never run on a GPU) against today's default, then every check with it on, then it in the stack.
# Why: in run 99's 128x15 profile SnakeBeta and the residual adds were ~27% of the CUDA time at the memory bandwidth.
# A residual unit's tail (SnakeBeta of conv1's output, the 1x1 conv2, the add, the next SnakeBeta) moves eight
# passes over [B, T, C]; as one GEMM (kernels/unit_tail.py) two reads and two writes: ~18 GB less per 128x15 step,
# ~4.5 ms at 4 TB/s, if the Triton GEMM (128x128x32 tiles, no autotuning) is as fast as cuDNN's 1x1 conv.
# Predictions (fused-cl+graph, 128 rows, medians of 4 alternating rounds in one process): base 128x2 6.8-7.6 ms,
# 128x15 34.8-36.2 ms (run 101's R: 7.363 and 35.230); the kernel 128x15 -3 to -12%, 128x2 -3 to +3%. Checks: all
# pass, `unit_tail_kernel_vs_separate` fp32 within 1e-4 and bf16 within 1.5x the plain bf16 error. Stack with it on
# (U): 512 streams 1,420-1,500 audio-s/s with no gap; 800 at most 0.5% gapped.
# Rule, written before the run: `unit_tail_kernel` turns on by default if every check of the checks run passes and
# its 128x15 median is >= 3% shorter than the base's, with its 128x2 median no more than 1% longer. If its 128x15 is
# slower, the next step is the GEMM's tiles (BLOCK_N 256 for 384-768 channels, num_warps 8), not the default.
source tools/device/setup.sh
stamp start
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel"
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 2 15 --cudnn-benchmark \
    --min-seconds 0.5 --no-checks --ab unit_tail_kernel --ab-rounds 4 --out $OUT/ab.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab
python3 tools/bench_codec.py $F --unit-tail-kernel --modes fused-cl,fused-cl+graph --batches 128 --chunks 2 15 \
    --cudnn-benchmark --min-seconds 0.3 --profile --out $OUT/checks.json 2>&1 | grep -E '"check"|"error"|^fused' \
    | cut -c1-400
stamp checks
env OMNI_CODEC_UNIT_TAIL_KERNEL=1 $S --concurrency 512 800 --level-timeout 150 --out /tmp/U; save U
