# Session 19, call 1 (nvidia-h200): next_one_gpu.sh as written at the end of session 18 (header below).
# Next one-GPU call (nvidia-h200, ~9 minutes): today's default (session 18: the 200 ms lead floor on) at 128/512 and
# 800, and where the 128-stream TTFA p99 tail lies. Runs 65-66 at 128 streams: client p99 271, 254 (floor off) and
# 217 ms (floor on), 40-71 ms above the gateway's own p99 (200, 203, 177) in each, with no gateway stall counted: the
# tail is between the client and the gateway's handler. bench_stack now splits each request's client TTFA by the
# gateway's line of the same request id (`X-Request-Id`, wall clock shared on one machine): `to_handler` (client start
# to the handler's start: connection, request bytes, the worker's loop taking it), the gateway's own TTFA, and
# `to_client` (its first audio on the way back), each as p50/p99 and as the median over the slowest 1% by client
# TTFA (`slowest_to_handler_ms`, `slowest_in_gateway_ms`, `slowest_to_client_ms`).
# Prediction: at 128 streams the slowest 1% have slowest_to_handler_ms >= 30 (a new request's bytes wait behind the
# worker's response writes for its ~32 other streams); to_client p99 under 15 ms. A second stack with 8 gateway workers
# (16 streams each) tests it: if to_handler carries the tail, its 128-stream p99 falls by >= 20 ms there.
# Default at 512 (floor on; run 66: 0% gapped, 1,124.8 audio-s/s) and 800 (run 66: 40%, 8% with the buffer) again,
# as the same machine's baseline for next_one_gpu_2.sh.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 --out /tmp/D1; save D1
$S --concurrency 128 --gateway-workers 8 --out /tmp/W8; save W8
$S --concurrency 800 --level-timeout 150 --out /tmp/F; save F
python3 tools/compare_runs.py default=/tmp/D1,/tmp/F gateway_workers_8=/tmp/W8
