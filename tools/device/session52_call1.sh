# Run 186 (session 52, call 1) = next_one_gpu.sh as of 21a4889.
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~7 minutes), any time: (1) run 185's A/B on the 0.6B talker, whose
# backbone o_proj is also [1024, 2048] (28 of its ~103 such launches a step; no small_to_mtp): today's split-free
# launch from 9 rows against split-K 4 of 32 x 128 pinned (+pin-1024x2048-32x128s4k4), M, P, M, P in one process at 8,
# 16 and 32 rows; (2) the one-GPU stack with today's defaults, 1.7B, 1 / 16 / 32 streams (run 179: 20.6 / 208.8 /
# 346.5 audio-s/s on an H200; state the card: an H100 is not comparable); (3) the 1.7B step's GEMMs launch by launch
# at 16 rows again (run 181 before the change: the predictor's o_proj 7.6 us a launch on an H100).
# Why: run 185 timed the 1.7B only (H100): 16 rows -2.07 to -2.35%, 32 rows -1.59 to -1.73%, 8 rows -0.16 to -0.25%.
# Prediction: 0.6B 16 rows -1.5 to -3%, 32 rows -1 to -2.5%, 8 rows within +-0.5%; the stack at 16 and 32 streams
# within run 179's spread or above it (H200); the o_proj launches at 16 rows 4-6 us.
# Rule: if the 0.6B step at 8, 16 or 32 rows is > 0.3% slower with the split-free launch in all three adjacent pairs,
# SPLIT_FREE_FROM goes off (split-K at every row count, as before run 185) until a rule good for both models is
# timed; else it stays.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
P=$M+pin-1024x2048-32x128s4k4
talker_order 0.6B 8,16,32 "$M,$P,$M,$P" ab
$S --concurrency 1 16 32 --out /tmp/stack; save stack
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 16 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 16 --profile-kernel skinny_linear --json $OUT/talker_calls.json > $OUT/calls.txt 2>&1
grep -E "Traceback|rror|replays at|^  16 rows: " $OUT/calls.txt | cut -c1-300  # per weight (gemm_table); calls in the JSON
stamp calls
