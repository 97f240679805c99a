# Run 212 (session 59, call 1) = next_one_gpu.sh widened to 128 and 512 streams (the state card with session 58's
# defaults, among them the talker's warm-up over prompt lengths 8-32). One-GPU call named `nvidia-h200` (~6 minutes);
# an H100 may come, and then it is read against the H100 rows only (runs 199-200).
# (1) The one-GPU stack, 1.7B, 1 / 16 / 32 / 128 / 512 streams opened at once, 6 rounds each; (2) the 1.7B step's
# GEMMs by weight at 16 rows (gemm_table).
# Prediction on an H200: 16 and 32 streams 2-5% above run 179 (208.8 / 346.5 audio-s/s; sessions 52-56's step
# changes), 1 stream 20-22 audio-s/s with TTFA p99 under 60 ms (the warm-up: no compile after ready); TTFA p99 at 128
# streams 190-240 ms; 512 streams 1,450-1,560 audio-s/s (session 39's defaults: 1,392-1,518, runs 156-157; sessions
# 52-56 took 2-3% off the 512-row step on an H100), no gapped request.
# On an H100: 1 / 16 / 32 streams within 5% of run 199 (19.1 / 214.3 / 371.6), 1-stream TTFA p99 under 70 ms (run
# 199: 272, before the warm-up fix; run 210: 66); 128 streams 790-850 and 512 streams 1,310-1,420 (runs 192 and 200).
# No rule: it decides nothing.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
$S --concurrency 1 16 32 128 512 --level-timeout 150 --out /tmp/stack; save stack
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 16 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 16 --profile-kernel skinny_linear --json $OUT/talker_calls.json > $OUT/calls.txt 2>&1
grep -E "Traceback|rror|replays at|^  16 rows: " $OUT/calls.txt | cut -c1-300  # per weight (gemm_table); calls in the JSON
stamp calls
