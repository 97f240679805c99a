# One-GPU call (nvidia-h200, ~8 minutes), only after next_one_gpu_2.sh's draw bench met its rule (a warp count >= 25%
# faster on sampled rows at V = 2,048 and 3,072, not > 10% slower on greedy ones): both draw kernels launched with 1
# or 2 warps a row (+draw-warps-1, +draw-warps-2) A/B'd in the 1.7B step at 1, 16 and 32 rows, both orders.
# Why: a sampled row's draw was ~11 us at 8 warps (run 170), most of it the top-k search's reductions across warps;
# the 16-row step's 15 predictor draws took 189 us (run 168). This bench's odd slots sample, its even ones are greedy.
# Prediction: with the warp count the draw bench found best, 16 and 32 rows -1 to -2.5%, 1 row (greedy) within
# +-0.5%; the step's check says the same codes (the ids do not depend on the launch).
# Rule: the draw kernels' default num_warps (kernels/sampling._launch_options) becomes the faster of 1 and 2 if its
# check is equal, 16 and 32 rows are >= 1% faster in both orders and 1 row is not > 0.5% slower in either.
source tools/device/setup.sh
stamp start
# Today's defaults: since run 173 (session 45) with programmatic launch in steps of at most 64 rows.
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
talker_order 1.7B 1,16,32 "$M,$M+draw-warps-1,$M+draw-warps-2" warps1
talker_order 1.7B 1,16,32 "$M+draw-warps-2,$M+draw-warps-1,$M" warps2
