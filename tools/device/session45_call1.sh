# Run 173 (session 45, call 1): programmatic launch by step size. Runs 171-172 timed +pdl (every launch of the step
# programmatic) at 1, 16, 32 and 512 rows: -16.4/-16.7%, -8.3/-8.5%, -2.8/-3.0%, +0.7/+1.0%. This run times it at 64,
# 128 and 256 rows, and the new programmatic_launch_max_rows (+pdl-to-32: only the steps of at most 32 rows, each
# graph as its bucket was captured) against both, one process per order; each process checks graphs with the launch
# against graphs without it bit for bit (codes, caches, hidden state, slot state), with and without the bound.
# Prediction: +pdl at 64 rows -1 to -2%, at 128 within 0.5%, at 256 0 to +1%; +pdl-to-32 at 1 row within 1% of +pdl,
# at 64-512 rows within 0.5% of today's defaults.
# Rule (written before the run): N = the largest of 32, 64, 128 and 256 such that +pdl was faster than today's
# defaults in both orders at every row count up to N (1, 16 and 32 from runs 171-172; at 64, 128 and 256 by >= 0.5%
# in this run). programmatic_launch turns on by default with programmatic_launch_max_rows = N if every bit check is
# equal in both processes and +pdl-to-32 is within 1% of +pdl at 1 row and within 0.5% of today's defaults at 64,
# 128, 256 and 512 rows in both orders (the bound does what it says); otherwise both stay as they are.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32
talker_order 1.7B 1,64,128,256,512 "$M,$M+pdl,$M+pdl+pdl-to-32" rows1
talker_order 1.7B 1,64,128,256,512 "$M+pdl+pdl-to-32,$M+pdl,$M" rows2
