# One-GPU call (nvidia-h200, ~8 minutes), any time: two changes built in session 43 and only run under the
# interpreter, each A/B'd against today's defaults on the 1.7B step at 1, 8, 16, 32 and 512 rows in one process, both
# orders (M, +silu-down, +pdl; then the reverse). Each process first checks each bit for bit: +silu-down against the
# silu_mul path at 1, 3, 16, 32 and 64 rows (codes, caches, hidden state, slot state); +pdl graphs captured with
# programmatic launch against graphs captured without it at 1, 5, 16 and 64 rows, and graph = eager padded with it.
#
# +silu-down (use_silu_down, talker setting skinny_linear_silu_down): each MLP's SiLU(gate) * up formed as its down
# projection's kernel loads its input. Why: a step runs one silu_mul kernel per decoder layer (28 talker + 15 x 5
# predictor = 103 launches); at 1 row a kernel of the step averages ~3.3 us (run 168: 3,330 us of kernels), a short
# elementwise one ~1.5-2; each down-projection program computes its share of the gate again (the 1.7B talker's at 1
# row: 6,144 exps in each of 512 programs). Prediction: 1 row -2 to -4%, 8 and 16 rows -1.5 to -3%, 32 rows -1 to -3%,
# 512 rows within 0.5% (past 32 rows the down projection is cuBLAS's and silu_mul runs as before).
# Rule: on by default (skinny_linear_silu_down True) if its check is equal in both processes, the 1- and 16-row steps
# are >= 1% faster in both orders and no row count is > 0.5% slower in both orders.
#
# +pdl (kernels/programmatic_launch.py, talker setting programmatic_launch): every Triton kernel of the step launched
# with programmatic dependent launch, waiting for the kernels ahead of it as its first instruction. Why: a small step
# is ~1,000 kernels in a chain, 3,640 us of wall time against 3,330 us of kernels at 1 row (run 168); with the launch
# attribute each kernel's programs are resident when the one ahead ends. Prediction: 1 row -3 to -8%, 8 to 32 rows -2
# to -6%, 512 rows within 1%; if the CUDA graph capture drops the attribute, no change at all (then say so).
# Rule: on by default (programmatic_launch True) if its checks are equal in both processes, the 1- and 16-row steps
# are >= 1% faster in both orders and no row count is > 0.5% slower in both orders.
source tools/device/setup.sh
stamp start
nvidia-smi --query-gpu=driver_version,compute_cap --format=csv,noheader
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32
talker_order 1.7B 1,8,16,32,512 "$M,$M+silu-down,$M+pdl" ab1
talker_order 1.7B 1,8,16,32,512 "$M+pdl,$M+silu-down,$M" ab2
