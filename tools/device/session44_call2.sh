# Run 172 (session 44, call 2; the machine of run 171): the reverse order of run 171's A/B without early weights,
# whose first mode there (+pdl+early-weights) stopped the process (a dot launch out of shared memory). Same rule as
# next_one_gpu_3.sh's for +pdl: on if its checks are equal in both processes, the 1- and 16-row steps >= 1% faster in
# both orders and no row count > 0.5% slower in both.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32
talker_order 1.7B 1,16,32,512 "$M+pdl,$M" ab2
