# Run 189 (session 52, call 4) = next_one_gpu.sh as of 0a1c0c4.
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~7 minutes), any time: A/B of each decoder layer's residual adds in the
# epilogues of the o_proj and down GEMMs and its RMSNorms in the prologues of the qkv and gate_up GEMMs
# (+gemm-add-norm: talker_fused's gemm_add_norm, kernels/skinny_linear.py `residual`, `norm`), M, G, M, G in one
# process, 1.7B at 1, 16 and 32 rows, then the 0.6B at 1 and 16; its check against the add + norm kernels (codes equal
# of all, and the hidden state's largest difference) with every other check.
# Why: session 51's candidate (perf-notes "What is left"): the add + norm kernels are 206 launches of a 1.7B step,
# 295 us exposed at 1 row and 298 at 16 (run 181, H100). Run 188 showed what a launch costs where it is not overlapped.
# A forward folds only where all four of a layer's GEMMs run the kernels (the backbone to 16 rows, the predictor to 32).
# Prediction: 1 row -1 to -5%, 16 rows -1 to -4%, 32 rows -0.5 to -3% (the predictor only); the 0.6B alike. Each GEMM
# after a norm reads its rows twice (the squares, then the chunks) and the norm's weight, a dependent pass before its
# K loop, which takes back part of what the launches give.
# Rule: a talker setting (gemm_add_norm), on by default, if on the 1.7B 1, 16 and 32 rows are each >= 0.5% faster in
# all three adjacent pairs and the 0.6B not > 0.3% slower at 1 or 16 in all three; if some row counts gain and others
# lose, a rows bound is chosen from these numbers and timed again; if none gains, the mode and kernels' NORM_INPUT and
# ADD_RESIDUAL are taken out.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
G=$M+gemm-add-norm
talker_order 1.7B 1,16,32 "$M,$G,$M,$G" ab
talker_order 0.6B 1,16 "$M,$G,$M,$G" ab_06
