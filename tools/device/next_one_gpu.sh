# Next one-GPU call (nvidia-h200, ~8 minutes): today's default (session 16: the first chunk sized by the talker's
# load, 3 frames from 256 requests held) repeated at 128 and 512 streams, and for the first time in the open loop.
# Session 16's TTFA p99 at 128 streams: 218, 234, 262, 227 ms (runs 60, 62-64; eight of nine stacks since run 54
# under 250). 512 streams: 4% and 6% of requests gapped from the first byte, 0% with a 100 ms buffer (runs 63-64).
# The open loop ran with 2-frame first chunks only (run 56: 824 listeners with no gap at 80 requests/s, 1,083 with
# 0.1% at 96/s, 18% at 104/s). At 96-104/s the talker holds ~340-380 requests, so new streams get 3 frames there.
# Predictions: 128 p99 in 218-262 (2.0 frames); 512 gaps <= 6% (3.0 frames); open loop: 80/s and 96/s no gap,
# 104/s under 18% (3 frames give the ramp 80 ms more slack), TTFA p50 +1 step (~30 ms) at 96-104/s.
# Run 63's 262 ms p99 at 128 streams: one gateway worker's sender took 9 requests at the same instant, 62-70 ms after
# their handlers began (the voice-list read is ruled out: the refenc answered all four workers' reads 0.2-0.3 ms each,
# within 11 ms of the level's start). A GC pause in that worker is the candidate: bench_stack now prints the gateway's
# `gateway_gc_share` and `gateway_gc_over_20ms` (its /metrics, workers summed), and the send split into
# `gateway_voices` (the voice list read) and `gateway_prepared` (the prompt built), and (session 17) the workers'
# event-loop lag and their writes to the talker: `gateway_loop_lag_over_20ms`, `gateway_write_over_20ms`.
# Prediction: a 128-stream level with a send p99 above 40 ms has gateway_gc_over_20ms >= 1 and
# gateway_loop_lag_over_20ms >= 1 and its prepared p99 near its send p99 (the loop stalled before the prompt was
# built); if instead a write of 20 ms or more is counted and no lag, the sender waited on the talker's side of the
# call (HTTP/2 flow control, the talker's loop not reading). Levels without a stall have none of the three.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 --out /tmp/D1; save D1
$S --concurrency 128 512 --out /tmp/D2; save D2
$S --concurrency 800 --arrival-seconds 25 --rates 80 96 104 --out /tmp/O; save O
python3 tools/compare_runs.py default=/tmp/D1,/tmp/D2,/tmp/O
