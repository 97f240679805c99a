# One-GPU call, on an H200 only (`nvidia-h200`; ~7 minutes with the start; on an H100 the numbers are not comparable
# with the record's H200 rows, and run 212 already is this call on an H100): the state card with today's defaults.
# (1) The one-GPU stack, 1.7B, 1 / 16 / 32 / 128 / 512 streams opened at once, 6 rounds (run 179 on an H200: 20.6 /
# 208.8 / 346.5 at 1 / 16 / 32; runs 156-157: 1,517.8 and 1,392.2 at 512 with session 39's defaults); (2) the 1.7B
# step's GEMMs by weight at 16 rows (gemm_table), to put the split-free launch's H100 result (runs 185-186) in H200
# terms.
# Prediction: 16 and 32 streams 2-5% above run 179 (sessions 52-56's step changes: the split-free launch, projected
# lookups and lookup kernels, the step input kernel, the step RoPE tables, each timed on an H100 only); 1 stream 20-22
# audio-s/s with TTFA p99 under 90 ms (no compile after ready since session 58; run 212's H100: 83 ms, the client's
# first request); TTFA p99 at 128 streams 190-240 ms; 512 streams 1,450-1,560 audio-s/s, no gapped request; the
# predictor's o_proj at 16 rows 4-5 us a launch. No rule: it decides nothing.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
$S --concurrency 1 16 32 128 512 --level-timeout 150 --out /tmp/stack; save stack
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 16 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 16 --profile-kernel skinny_linear --json $OUT/talker_calls.json > $OUT/calls.txt 2>&1
grep -E "Traceback|rror|replays at|^  16 rows: " $OUT/calls.txt | cut -c1-300  # per weight (gemm_table); calls in the JSON
stamp calls
