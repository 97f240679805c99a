# Next one-GPU call (nvidia-h200, ~9 minutes): today's default (session 19: the 200 ms lead floor and 4-frame first
# chunks from 256 requests held) at 128/512 and 800 requests open at once, and the open loop, with the way to the
# handler split in two.
# Run 68: at 128 streams the slowest 1% were all opening-wave requests, 52-125 ms of them before the gateway's handler
# started (the opening wave's to_handler p99 103 ms, 41 ms after it), and 8 gateway workers instead of 4 did not
# shorten it (88 ms). `omni bench` now records when httpcore wrote each request's last byte (`sent_s`) and whether
# the request opened a connection; bench_stack reports `in_client` (client start to that byte) and `to_handler` (that
# byte to the handler's start) apart.
# Prediction: at 128 streams the slowest 1% have slowest_in_client_ms >= 30 (8 client processes each opening 16
# connections at once in one event loop), slowest_to_handler_ms under 30; in_client p50 under 3 ms. If instead
# to_handler keeps most of it, the gateway's accept path is next (uvicorn's backlog, its workers' accept).
# Default at 512 (runs 69, 72 with 4 frames: 0% gapped, 1,145.5 and 1,123.5 audio-s/s) and at 800 (13% and 28%
# gapped, 0% and 9% with a 100 ms buffer): a third 800 sample for the spread. Open loop at 96/104/112 requests/s
# (run 67 with the floor off and 3 frames: 0% at 96/s, 0.3% at 104/s; run 47: 48% at 112/s): prediction no gap at 96
# and 104/s, under 10% at 112/s.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 --out /tmp/D1; save D1
$S --concurrency 800 --level-timeout 150 --out /tmp/F; save F
$S --concurrency 800 --arrival-seconds 25 --rates 96 104 112 --out /tmp/O; save O
python3 tools/compare_runs.py default=/tmp/D1,/tmp/F,/tmp/O
