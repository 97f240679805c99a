# Next one-GPU call (after session 69; ~8 minutes with the start). Ask for `nvidia-h200`: an H100's numbers are not
# comparable with the record's H200 rows, and every call from session 54 to 69 got an H100 (session 69 ran this on
# one: the 0.6B card, run 246, and the H200 part on the H100, run 247).
# On an H200: the state card with today's one-GPU layout, `omni serve --mps` (session 60) and today's defaults
# (session 66: the codec's conv1 and conv2 GEMMs), 1.7B, 1 / 16 / 32 / 128 / 512 streams opened at once, 6 rounds;
# then the 1.7B step's GEMMs by weight at 16 rows (bench_talker_step's gemm_table, today's modes $M; measured on
# H100s only, run 199); then, with time left, the same stack without MPS at 16 and 512 streams, 3 rounds (run 179 on
# an H200 without MPS: 20.6 / 208.8 / 346.5 at 1 / 16 / 32; runs 156-157: 1,517.8 and 1,392.2 at 512).
# Prediction on an H200: 512 streams 1,650-1,850 audio-s/s, none gapped, TTFA p99 at 128 streams 150-230 ms, 1 stream
# 20-24 audio-s/s; under MPS +5 to +15% over without at 512 and +15 to +30% at 16.
# On an H100 instead: the 0.6B's state card under MPS at the same levels (run 220, session 60's defaults: 281.2 /
# 995.6 / 1,707.3 at 16 / 128 / 512). Prediction: within +-8% of run 220 at 16 and 128, 512 streams 1,700-1,900 (the
# codec GEMMs, +3.7% for the 1.7B in run 237), none gapped.
# No rule: measurements of the state.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    ${S/--models 1.7b/--models 0.6b} --mps --concurrency 1 16 32 128 512 --level-timeout 150 --out /tmp/small
    save small
    exit 0
fi
$S --mps --concurrency 1 16 32 128 512 --level-timeout 150 --out /tmp/stack; save stack
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 16 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 16 --profile-kernel skinny_linear --json $OUT/talker_calls.json > $OUT/calls.txt 2>&1
grep -E "Traceback|rror|replays at|^  16 rows: " $OUT/calls.txt | cut -c1-300  # per weight (gemm_table)
stamp calls
if [ $(($(date +%s) - T0)) -lt 380 ]; then
    $S --rounds 3 --concurrency 16 512 --level-timeout 120 --out /tmp/nomps; save nomps
fi
