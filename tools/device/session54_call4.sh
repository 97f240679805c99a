# Run 193 (session 54, call 4; ~4 minutes) = next_one_gpu_2.sh at 1 and 16 rows only (M, S, M, S: the step input
# kernel against today's defaults, 1.7B), to fit the session's last 280 s of device time; its prediction and rule as
# written there (32, 128 and 512 rows then still to run).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels
S=$M+step-inputs
talker_order 1.7B 1,16 "$M,$S,$M,$S" ab
