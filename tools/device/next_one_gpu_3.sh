# Ran as runs 171-172 (session 44): +pdl -16.4/-16.7% at 1 row, -8.3/-8.5% at 16, +0.7/+1.0% at 512 (rule not met,
# off); early weights stopped out of shared memory, since fixed (skinny_linear.dot_stages) but not yet timed.
# One-GPU call (nvidia-h200, ~7 minutes), any time: programmatic dependent launch (built in session 43, only run
# under the interpreter) A/B'd against today's defaults on the 1.7B step at 1, 16, 32 and 512 rows in one process,
# both orders (M, +pdl, +pdl+early-weights; then the reverse). Each process first checks graph = eager padded with
# each mode, and graphs captured with the launch against graphs captured without it, at 1, 5, 16 and 64 rows, bit for
# bit (codes, caches, hidden state, slot state).
# +pdl (kernels/programmatic_launch.py, talker setting programmatic_launch): every Triton kernel of the step launched
# with programmatic dependent launch, waiting for the kernels ahead of it as its first instruction. Why: a small step
# is ~1,000 kernels in a chain, 3,640 us of wall time against 3,330 us of kernels at 1 row (run 168); with the launch
# attribute each kernel's programs are resident when the one ahead ends. Prediction: 1 row -3 to -8%, 16 and 32 rows -2
# to -6%, 512 rows within 1%; if the CUDA graph capture drops the attribute, no change at all (then say so).
# Rule: on by default (programmatic_launch True) if its checks are equal in both processes, the 1- and 16-row steps
# are >= 1% faster in both orders and no row count is > 0.5% slower in both orders.
# +early-weights (programmatic_early_weights): the GEMM kernels also load their first weight chunk before the wait,
# so a GEMM's weights start streaming while the small kernel ahead of it (a norm, the attention, a draw) runs.
# Prediction against +pdl: 1 row -3 to -10% (the GEMMs are 63% of a 1-row step's kernels, run 168), 16 and 32 rows
# -1 to -5%, 512 within 1%. Rule: on (with +pdl on) if its checks are equal, 1 and 16 rows >= 1% faster than +pdl in
# both orders and nothing > 0.5% slower than +pdl in both.
# First tools/bench_pdl.py (seconds): chains of 200 one-row kernels in a graph with the launch off, on, and on with
# early weights. Prediction: norms ~2 us a kernel off, 20-50% less on; norms+gemms 10-30% less on, early weights
# 5-20% less again; outputs equal everywhere. If "on" equals "off" there, the attribute is not reaching the graph and
# the step A/B below will show nothing. Decides nothing by itself.
# $M itself: its 16-row step should be run 170's (4.51-4.52 ms) within 1%: session 44 found
# session 43's restructured GEMM kernels compiled to other code at their default launches, mended it, and checked
# that every step kernel now compiles to run 170's code with the GPU's Triton (tools/compare_kernel_code.py).
source tools/device/setup.sh
stamp start
nvidia-smi --query-gpu=driver_version,compute_cap --format=csv,noheader
python3 tools/bench_pdl.py --kernels 200 --out $OUT/pdl.json 2>&1 | cut -c1-200
stamp chains
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32
talker_order 1.7B 1,16,32,512 "$M,$M+pdl,$M+pdl+early-weights" ab1
talker_order 1.7B 1,16,32,512 "$M+pdl+early-weights,$M+pdl,$M" ab2
