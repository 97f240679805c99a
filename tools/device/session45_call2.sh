# Run 174 (session 45, call 2; the machine of run 173, 367 s of device time left): next_one_gpu_4.sh.
# One-GPU call (nvidia-h200, ~5 minutes), any time: the SiLU in the down projection's kernel (use_silu_down, talker
# setting skinny_linear_silu_down; built in session 43, only run under the interpreter) A/B'd on the 1.7B step at 1,
# 16, 32 and 512 rows in one process, both orders; each process first checks it bit for bit against the silu_mul
# path at 1, 3, 16, 32 and 64 rows (codes, caches, hidden state, slot state).
# Why: a step runs one silu_mul kernel per decoder layer (28 talker + 15 x 5 predictor = 103 launches); at 1 row a
# kernel of the step averages ~3.3 us (run 168: 3,330 us of kernels), a short elementwise one ~1.5-2. With the gate
# formed as the down projection's kernel loads its input those launches go; each down-projection program computes its
# share of SiLU(gate) * up again (the 1.7B talker's at 1 row: 6,144 exps in each of 512 programs).
# Prediction: 1 row -2 to -4%, 16 rows -1.5 to -3%, 32 rows -1 to -3%, 512 rows within 0.5% (past 32 rows the
# down projection is cuBLAS's and silu_mul runs as before).
# Rule: on by default (skinny_linear_silu_down True) if the check is equal in both processes, the 1- and 16-row steps
# are >= 1% faster in both orders and no row count is > 0.5% slower in both orders.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32
talker_order 1.7B 1,16,32,512 "$M,$M+silu-down" silu1
talker_order 1.7B 1,16,32,512 "$M+silu-down,$M" silu2
