# Run 204 (session 57, call 6): the norm + RoPE + write + attention kernel on the backbone's passes only (the code
# predictor's keep the two kernels: run 203 found its 4-warp launch there not the same bits in fp32), the model-level
# check against the two kernels and one M, A pair at 1 and 16 rows (~3 minutes; the last 278 s of the session's budget).
# Prediction: the bench's check against the two kernels equal (codes, caches, hidden state, slot state); A against M
# -0.3 to +0.5% at 1 row, -0.5 to -1.5% at 16 (28 launches fewer, not 98). No rule: one pair decides nothing.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
A=$M+norm-rope-attention
talker_order 1.7B 1,16 "$M,$A" ab
