# Session 41 call 3 (run 164). One-GPU call (nvidia-h200, ~8 minutes): +by-shape again with row_launch_for at 1 row only
# (2-4 rows back on LAUNCH; split-K at K >= 2N unchanged) A/B'd on the 1.7B step at 1-16 rows, one process, both
# orders; then run 163's unfinished second order of +dot-32 at 32 rows.
# Why: run 163 (+by-shape with row_launch_for at every row count below the dot kernel): 1 row -2.6 / -2.2%, 8 rows
# -2.1 / -1.8%, 16 rows -1.7 / -0.9%, but 2 rows +1.3 / +1.0% and 4 rows +3.7 / +3.5%: its rule not met (off). At 2-4
# rows only the row kernel's launches differ there (and split-K on the talker's down_proj at 4 rows): run 162 timed
# row_launch_for at 1 row only. +dot-32 at 32 rows: 5.250 -> 4.961 ms (-5.5%) in the one order that finished; with
# +by-shape 4.972.
# Predictions: 1 row -2.2 to -2.6% (as run 163), 2 rows within 0.5% (nothing of run 163's change runs there now), 4
# rows -0.3 to -1% (split-K on the talker's down_proj, 28 calls), 8 rows -1.8 to -2.1%, 16 rows -0.9 to -1.7%; +dot-32
# at 32 rows -4 to -6% in this order too.
# Rules, written before the run: +by-shape goes on by default (a talker setting skinny_linear_by_shape, on) if graph =
# eager holds, the error is at most twice cuBLAS's, and in both orders no batch of 1-16 rows is more than 0.5% slower
# and at least two are >= 1% shorter; otherwise it stays off. +dot-32: run 163's rule (on if graph = eager, the error
# at most twice cuBLAS's, and 32 rows >= 1.5% shorter in both orders); with +by-shape on, split-K stops at 16 rows if
# dot-32+by-shape is more than 0.5% slower than dot-32 at 32 rows in both orders.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot
talker_order 1.7B 1,2,4,8,16 "$M,$M+by-shape" off_first
talker_order 1.7B 1,2,4,8,16 "$M+by-shape,$M" on_first
talker_order 1.7B 32 "$M+dot-32+by-shape,$M+dot-32,$M" d32_on_first
stamp end
