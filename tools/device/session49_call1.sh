# Run 176 (session 49, call 1, an H100: the draw bench took 464 s there and the call was cut at 590 s in the radix A/B): next_one_gpu_2.sh whole.
# One-GPU call (nvidia-h200, ~9 minutes), any time: the draw kernel by warps a row and top-k search
# (tools/bench_draw.py); then the radix select A/B'd in the step; last, where a 1-, 16- and 32-row 1.7B step's time
# goes with today's defaults, kernel by kernel from graph replays (bench_talker_step --profile-replays), as run 168
# did with session 41's.
# Why: run 168 found the 16-row step's 16 embedding lookups at 279 us (6.4% of its kernels) and the predictor's 15
# sampled draws at 189 us; session 42 changed the lookups (runs 169-170), not the draws. The next change should come
# from the new split.
# Prediction: at 16 rows the lookups (now PyTorch's index kernel) 20-35 us, the kernels' total 4,150-4,250 us (run
# 168: 4,430); at 1 row unchanged within 1%; the draws as run 168 (189 us at 16 and 32 rows). Decides nothing.
# The draw by warps: a sampled row's draw is ~11 us at V = 2,048 with 8 warps (run 170), most of it the top-k
# search's 32 reductions across the warps (run 169: more work a round cost more than the rounds saved). With 1 or 2
# warps a reduction is shuffles within a warp, no barrier. Prediction: sampled 4-8 us at 1-2 warps (V = 2,048; 6-11
# at 3,072), greedy within 0.5 us of the default, ids equal. Rule for the next call: a warp count >= 25% faster on
# sampled rows at both vocabularies and not > 10% slower on greedy ones gets a step A/B (a bench mode to add).
# The radix select (`draw(..., radix_top_k=True)`, built in session 42 and only run under the interpreter): 4 passes
# of a 256-bin histogram, a suffix sum and two reductions instead of 32 reductions. Prediction: a sampled draw 6-9 us
# at V = 2,048 (11.3 with the bisection), ids equal; in the step (+radix-top-k, this bench's odd slots sample) 16 and
# 32 rows -0.5 to -1.5%, 1 row (greedy here) unchanged. Rule: radix on by default (draw's and draw_talker's
# radix_top_k) if bench_draw's ids equal everywhere, the step's check says the same codes, and the 16- and 32-row
# steps are >= 1% faster in both orders.
source tools/device/setup.sh
stamp start
# Today's defaults: since run 173 (session 45) with programmatic launch in steps of at most 64 rows.
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
# The order (session 43): the draw and the A/B first, the profile last, so a call cut at its time limit loses only the
# profile (the whole call was ~9 minutes against a 590 s limit).
python3 tools/bench_draw.py --rows 1 16 32 --num-warps default 1 2 4 --top-k-search bisection radix \
    --out $OUT/draw.json 2>&1 | cut -c1-200
stamp draw
talker_order 1.7B 16,32 "$M,$M+radix-top-k" radix1
talker_order 1.7B 16,32 "$M+radix-top-k,$M" radix2
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 1,16,32 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 1,16,32 --json $OUT/talker_profile.json > $OUT/profile.txt 2>&1
grep -E "Traceback|rror" $OUT/profile.txt | cut -c1-300
grep -E "replays at|batch [0-9]+:" $OUT/profile.txt | cut -c1-220
stamp profile
