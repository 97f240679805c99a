# Session 40 call 4 (run 160). One-GPU call (nvidia-h200, ~8 minutes): skinny_linear_dot with run 159's launches and
# rows: the dot kernel's launch by the weight's N (dot_launch_for) and the row kernel kept below dot_from_for (4 rows
# at N <= 1,024, 2 at N <= 2,048, else 1), A/B'd in one process, both orders, on the 1.7B; then the 0.6B at 1-16 rows
# under a time limit.
# Why: run 159's first try (one guessed launch, 16 / 256 / 4 stages, from 2 rows on every weight) made the 1.7B step
# slower: 2 rows +13.7 / +13.8%, 4 +9.3 / +9.7%, 8 +3.0 / +2.9%, 16 +2.1 / +2.1% (rule not met: off). Its kernel
# timings (cold weights) showed why: the guess was 5-29% slower than the best launch per weight, and on the N <= 1,024
# weights (64 programs) the dot kernel lost to the row kernel at 2 rows (3.7-4.6 us against 5.0-6.4).
# Prediction (sum over a step's GEMMs of run 159's per-call times): 1.7B 2 rows -196 us (-4.4%), 8 rows -272 us
# (-5.4%), 16 rows -282 us (-5.3%); ranges 2, 4, 8 and 16 rows -2 to -7%, 1 / 128 / 512 rows within 0.5%.
# Rule, written before the run (as run 159's): skinny_linear_dot goes on by default (config default and help, the
# defaults test, internals, deploy comment, benchmarks, perf-notes, README) if graph = eager holds, the error is at
# most twice cuBLAS's, and in both orders on the 1.7B 2, 4 and 8 rows are each >= 2% shorter and 1, 128 and 512 rows
# no more than 0.5% slower; if 16 rows is not >= 2% shorter in both orders, the dot kernel stops at 8 rows. The 0.6B
# (if its part finishes): no batch of 1-16 rows more than 0.5% slower in both orders, else it stays off for both.
# Otherwise it stays off.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear
talker_order 1.7B 1,2,4,8,16,128,512 "$M,$M+skinny-dot" off_first
talker_order 1.7B 1,2,4,8,16,128,512 "$M+skinny-dot,$M" on_first
export -f talker_order stamp && export T0
timeout 110 bash -c "talker_order 0.6B 1,2,4,8,16 '$M,$M+skinny-dot' small_off_first"
timeout 100 bash -c "talker_order 0.6B 1,2,4,8,16 '$M+skinny-dot,$M' small_on_first"
stamp end
