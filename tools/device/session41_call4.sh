# Session 41 call 4 (run 165). One-GPU call (nvidia-h200, ~5 minutes): the 0.6B step with +by-shape+dot-32 (both went on
# by their rules on the 1.7B: runs 163-164) against without, at 1, 8 and 32 rows, one process, both orders.
# Why: the launches by shape, split-K at K >= 2N and the 32-row limit were fitted to the 1.7B's weights; the 0.6B's
# differ (its talker's down_proj [1024, 3072] takes split-K and the deep 1-row launch; every 0.6B weight has N <= 2048
# or K <= 1024, so all go to 32 rows, its [6144, 1024] gate_up too, which run 162 had 4.6% faster than cuBLAS at 32).
# Prediction: 1 row -1 to -3%, 8 rows -1 to -3%, 32 rows -3 to -7%.
# Rule, written before the run (as run 160's for the 0.6B): the 1.7B decided and the settings stay on for both; a
# 0.6B batch more than 0.5% slower in both orders goes into What is left as the next A/B (settings by model).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot
export -f talker_order stamp && export T0
timeout 230 bash -c "talker_order 0.6B 1,8,32 '$M,$M+by-shape+dot-32' small_off_first"
timeout 200 bash -c "talker_order 0.6B 1,8,32 '$M+by-shape+dot-32,$M' small_on_first"
stamp end
