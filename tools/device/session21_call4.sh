# Session 21, call 4 (nvidia-h200, ~3 minutes with the start): the channels-last SnakeBeta kernel with sin.approx.
# Run 75: `_snakebeta_cl_kernel` is 27.2% of the 128x15 fused-cl step's CUDA time (12.0 ms over 29 launches). Its
# PTX (compiled here for sm_90) is 5,024 lines with libdevice's sinf inlined and 1,085 with `sin.approx.f32`; one
# step's SnakeBeta moves ~21 GB (2.76 M elements per frame, a bf16 read and write each), 4.4 ms at 4.8 TB/s, so at
# 12.0 ms (1.8 TB/s) it is bound by the sine's instructions, not by memory.
# Prediction: sin.approx takes one step's SnakeBeta from ~12 ms to <= 7 ms (>= 3 TB/s) within the same error bound
# (max relative error vs the fp32 definition <= 2^-8 + 1e-6 in `speech` inputs; `wide` reported); a tile that
# divides C (96 -> 32 channels a program) saves ~25% of the 96-channel shapes with sinf and little with sin.approx;
# the service's codec step (fused-cl+graph, 128 rows) 45.5 -> <= 41 ms at 15 frames, 12.65 -> <= 12.2 at 2, with
# bench_codec's checks passing (channels-last whole = chunked, graph = eager, kernel within half a bf16 ulp).
# Rule, written before the run: OMNI_FAST_SIN's default turns on (16-bit outputs on a GPU) if the 128x15 step is
# >= 5% faster and every check passes; the stack A/B (512 and 800 streams) follows in the next session.
source tools/device/setup.sh
stamp start
python3 tools/bench_snakebeta.py --batch 128 --frames 15 --out $OUT/snakebeta.json
stamp snakebeta
OMNI_FAST_SIN=0 python3 tools/bench_codec.py --modes fused-cl+graph --batches 128 --chunks 2 15 --cudnn-benchmark \
    --no-checks --min-seconds 0.3 --out $OUT/codec_sinf.json 2>&1 | tail -6
stamp codec_sinf
OMNI_FAST_SIN=1 python3 tools/bench_codec.py --modes fused-cl+graph --batches 128 --chunks 2 15 --cudnn-benchmark \
    --min-seconds 0.3 --out $OUT/codec_fast_sin.json 2>&1 | tail -30
stamp codec_fast_sin
