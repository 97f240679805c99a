# Session 27 call 4 (nvidia-h200, ~3 minutes): the unit-tail GEMM by tile size, against the separate kernels, one
# residual unit's tail at a time (tools/bench_unit_tail.py), 128 rows at 15 and 2 frames.
# Why: run 105 turned the kernel down (128x15 +4.66%, 128x2 +6.08%); its profile had the 12 launches at 12.16 ms of
# the 15-frame eager CUDA time against ~9.9 ms for what they replace, while the same four passes in the residual add
# take ~4.5 ms: the GEMM runs at ~1/2.7 of the bandwidth. Suspects: the SnakeBeta prologue, recomputed by each of a
# row block's C/128 N-tiles (6 at 768 channels) and keeping the A tiles out of the async copy pipeline, and untuned
# tiles. The `gemm` sides (SnakeBeta apart, no prologue) separate the two.
# Predictions: separate, the 15-frame step's 12 tails summed 8-11 ms; fused with session 26's tiles 10.5-13.5 ms
# (1.1-1.4x separate); gemm-only with the same tiles 15-35% shorter than fused at 768 and 384 channels and within 10%
# of it at 96; the best fused tiles 0.85-1.05x separate. Differences from separate within bf16 rounding (out and the
# next SnakeBeta <= 0.25 at these scales).
# No rule: a measurement. If some tiles bring the fused 15-frame sum >= 5% under separate, the next call A/Bs
# unit_tail_kernel with them in the codec step; if only gemm-only gets there, the next build is SnakeBeta written by
# conv1's consumer apart and the GEMM with the epilogue only.
source tools/device/setup.sh
stamp start
TILES="128x128x32w4s3 128x128x64w4s3 128x128x64w8s3 64x128x64w4s4 128x256x32w8s3 128x256x64w8s3 256x128x32w8s3
64x256x64w8s3"
python3 tools/bench_unit_tail.py --rows 128 --frames 15 --tiles $TILES --out $OUT/tail15.json
stamp tail15
python3 tools/bench_unit_tail.py --rows 128 --frames 2 --tiles $TILES --out $OUT/tail2.json
stamp tail2
