# Run 238 (session 67, call 2) = next_one_gpu_3.sh as of 481207b.
# Second in line (session 66): run after next_one_gpu.sh (the stack pair for the codec GEMM switches).
# One-GPU call for an H200 (`nvidia-h200`; ~9 minutes with the start; an H100's numbers are not comparable with the
# record's H200 rows, so on an H100 it runs the H100 card further down instead): the state card with today's one-GPU
# layout, `omni serve --mps` (session 60).
# (1) The one-GPU stack under MPS (`bench_stack --mps`: the talker queues its steps ahead beside the codec), 1.7B,
# 1 / 16 / 32 / 128 / 512 streams opened at once, 6 rounds; (2) the same stack without MPS at 16 and 512 streams, the
# A/B of runs 216-217 on an H200 (run 179 on an H200 without MPS: 20.6 / 208.8 / 346.5 at 1 / 16 / 32; runs 156-157:
# 1,517.8 and 1,392.2 at 512); (3) the 1.7B step's GEMMs by weight at 16 rows (gemm_table).
# Prediction: under MPS against without, +15 to +30% at 16 streams and +5 to +15% at 512 (runs 216-217 on H100s: +27%,
# +13%); under MPS 512 streams 1,600-1,750 audio-s/s, no gapped request; TTFA p99 at 128 streams 170-240 ms; 1 stream
# 20-24 audio-s/s with TTFA p99 under 90 ms. No rule: it decides nothing (runs 216-217 made the layout the default).
# On an H100 (every call from session 54 to 63 got one) it runs the H100 card below instead: (a) the fp8 K/V cache's
# capacity, the stack under MPS with OMNI_TALKER_KV_CACHE_DTYPE=fp8 at 1,024 streams opened at once, 6 rounds (run
# 229, session 63, got no machine: four failed starts and three refusals; run 215 could not start 1,024 streams in
# bf16, the talker's 61.7 GiB beside the codec's 16 past 80 GB); (b) the codec's 128x4 replay by kernel (run 227
# profiled 128x15: the convs 62.7%; 128x2 is not a captured graph). Prediction: (a) the stack starts (the talker's cache
# ~30 GB, logged with the memory left), 1,024 streams 1,480-1,620 audio-s/s (run 218 under MPS: 1,601.6 with 800), at
# most 0.5% gapped; (b) at 4 frames the convs 50-60%, the elementwise kernels 20-30%, the transformer's 5-12%. No rule:
# measurements.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    OMNI_TALKER_KV_CACHE_DTYPE=fp8 $S --mps --concurrency 1024 --level-timeout 200 --out /tmp/fp8_1024; save fp8_1024
    mkdir -p /tmp/x && tar xzf $OUT/fp8_1024.tgz -C /tmp/x && grep -rh "K/V cache\|out of memory" /tmp/x | cut -c1-250
    python3 tools/bench_codec_ticks.py --kernels 128x4 --rows 128 --ticks 1 --iters 3 --side-buckets 1 \
        --out $OUT/codec_ticks.json > $OUT/codec_ticks.txt 2>&1
    grep -E "Traceback|rror|^\||replay:" $OUT/codec_ticks.txt | cut -c1-200 | head -30
    stamp codec
    exit 0
fi
$S --mps --concurrency 1 16 32 128 512 --level-timeout 150 --out /tmp/stack; save stack
$S --concurrency 16 512 --level-timeout 150 --out /tmp/nomps; save nomps
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 16 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 16 --profile-kernel skinny_linear --json $OUT/talker_calls.json > $OUT/calls.txt 2>&1
grep -E "Traceback|rror|replays at|^  16 rows: " $OUT/calls.txt | cut -c1-300  # per weight (gemm_table); calls in the JSON
stamp calls
