# Next one-GPU call (nvidia-h200, ~8 minutes): today's default (session 19: the 200 ms lead floor and 4-frame first
# chunks from 256 requests held) at 128/512 with the way to the handler split in two, and 128 streams with twice the
# client processes and with the clients' connections opened before the clock.
# Run 68: at 128 streams the slowest 1% were all opening-wave requests, 52-125 ms of them before the gateway's handler
# started (the opening wave's to_handler p99 103 ms, 41 ms after it), and 8 gateway workers instead of 4 did not
# shorten it (88 ms). Read after the runs (session 19, perf-notes item 2): inside each of the 8 client processes the
# 16 opening requests' starts spread over 50-80 ms (3-5 ms of the client's loop per request) and all 16 reached the
# handler together, just after the last of them started: the load generator's own loop, not the gateway. `omni bench`
# now records when httpcore started writing each request (`write_start_s`, after any new connection; session 20 moved
# it there from the last byte, which the gateway could read before the client's callback ran: CI saw -0.37 ms);
# bench_stack reports `in_client` (client start to that moment) and `to_handler` (from there to the handler's start,
# now the gateway line's own `start_ts`) apart.
# Prediction: at 128 streams slowest_in_client_ms >= 30 and slowest_to_handler_ms under 20; in_client p50 under 5 ms.
# With 16 client processes (8 streams each) the 128-stream client p99 falls by >= 20 ms against the same call's D1
# (the gateway's own p99 within 10 ms). If it does, bench_stack's client processes scale with the concurrency.
# With `--warm-connections` (each client opens its connections with GET /live before the clock; on this CPU the
# opening requests' starts went from [0, 60, 61, ... 69] ms to [0, 1.4, 2.6, ... 18] ms in one client of 16 streams):
# the opening wave's way to the handler p99 103 -> under 50 ms (`first_wave_before_handler_p99_ms`, session 20: run
# 68's `to_handler`, which then held the client's part too) and the client p99 down by >= 20 ms. If so, bench_stack
# warms by default (the load generator's start-up is not the server's latency) and the 128-stream row is restated
# with it.
# Default at 512 (runs 69, 72 with 4 frames: 0% gapped, 1,145.5 and 1,123.5 audio-s/s). The third 800 sample of
# today's default is next_one_gpu_3.sh's F.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 --out /tmp/D1; save D1
${S/--client-processes 8/--client-processes 16} --concurrency 128 --out /tmp/P16; save P16
$S --warm-connections --concurrency 128 --out /tmp/WARM; save WARM
python3 tools/compare_runs.py default=/tmp/D1 client_processes_16=/tmp/P16 warm_connections=/tmp/WARM
