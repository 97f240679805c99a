# Session 40 call 2 (run 158): next_one_gpu_2.sh as it stood.
# One-GPU call (nvidia-h200, ~4 minutes), any time: skinny_linear on the 0.6B talker, A/B'd in one process, both
# orders, at 1, 2, 4, 8, 128 and 512 rows.
# Why: max_rows_for (4 rows at N <= 1,024 outputs, else 1) came from the 1.7B's weights (run 153) and was A/B'd on the
# 1.7B (run 154: 1 row -28%, 2 and 4 rows -15%). The 0.6B's talker is 1,024 wide, so its o_proj [1024, 2048] and
# down_proj [1024, 3072] go through the kernel up to 4 rows too; its q/k/v [4096, 1024] and gate/up [6144, 1024] at
# 1 row only (run 153: the predictor's weights of those shapes 1.3x faster through the kernel at 1 row).
# Prediction: 1 row -20 to -30%, 2 and 4 rows -8 to -16%, 8 / 128 / 512 within 0.5%.
# Rule, written before the run: if any batch is more than 0.5% slower with it in both orders, max_rows_for is wrong
# for the 0.6B and gets a fix A/B'd the same way; otherwise nothing changes (skinny_linear is already on).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws
talker_order 0.6B 1,2,4,8,128,512 "$M,$M+skinny-linear" off_first
talker_order 0.6B 1,2,4,8,128,512 "$M+skinny-linear,$M" on_first
