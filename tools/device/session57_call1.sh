# Run 199 (session 57, call 1) = next_one_gpu.sh as written (the H200 state card with today's defaults).
# One-GPU call, on an H200 only (`nvidia-h200`; ~5 minutes; on an H100 the numbers are not comparable with the record's
# H200 rows): the state card again with today's defaults. (1) The one-GPU stack, 1.7B, 1 / 16 / 32 streams (run 179 on
# an H200: 20.6 / 208.8 / 346.5 audio-s/s; run 186 on an H100: 17.5 / 191.6 / 316.8); (2) the 1.7B step's GEMMs by
# weight at 16 rows (gemm_table), to put the split-free launch's H100 result (runs 185-186) in H200 terms.
# Prediction: the stack at 16 and 32 streams 2-5% above run 179 (the split-free launch: -2.1 to -2.4% of the 16-row
# step and -1.6 to -1.7% of the 32-row step on an H100; session 54's projected lookups and lookup kernels: -2.6 to
# -3.0% at 16 and 32 rows, runs 190-191, H100; session 55's step input kernel: -0.5 to -0.8%, runs 193-194, H100;
# session 56's step RoPE tables: -0.2 to -0.4%, runs 195-196, H100; the talker ~90% busy); 1 stream within run 179's
# spread or up to 3% above it; the predictor's o_proj at 16 rows 4-5 us a launch. No rule: it decides nothing.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
$S --concurrency 1 16 32 --out /tmp/stack; save stack
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 16 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 16 --profile-kernel skinny_linear --json $OUT/talker_calls.json > $OUT/calls.txt 2>&1
grep -E "Traceback|rror|replays at|^  16 rows: " $OUT/calls.txt | cut -c1-300  # per weight (gemm_table); calls in the JSON
stamp calls
