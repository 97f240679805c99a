# Run 188 (session 52, call 3) = next_one_gpu_3.sh as of 21a4889.
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~4 minutes), any time: A/B of the GEMM kernels letting the next kernel
# launch after their K loop rather than at their wait (+late-trigger, set_programmatic_launch's late_trigger), M, P, M,
# P in one process, 1.7B, at 1, 16 and 32 rows; every check (programmatic launch against none, bit for bit) with it.
# Why: run 184 found a GEMM with fewer programs faster in the step though slower alone (runs 159, 162), which reads as
# the GEMM's programs sharing the SMs with the next kernel's, scheduled at the GEMM's wait and waiting there. With the
# trigger after the K loop the next kernel's programs come in as the GEMM's last loads are in flight. At 1 row the row
# kernel runs 256-6,144 programs a GEMM (1 or 4 warps each; the gate_up's 6,144 more than 132 SMs x 32 hold at once),
# so the room may matter most there.
# Prediction: 1 row -0.5 to -2%, 16 and 32 rows within +-1%; every check equal.
# Rule: a talker setting for it (on by default) if 1 row is >= 0.5% faster in all three adjacent pairs and neither 16
# nor 32 rows is > 0.3% slower in all three; else nothing changes (the switch stays a bench extra).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
L=$M+late-trigger
talker_order 1.7B 1,16,32 "$M,$L,$M,$L" ab
