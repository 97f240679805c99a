# Next one-GPU call (nvidia-h200, ~8 minutes): session 13's defaults (startup heap frozen out of garbage collection,
# the shared voice-list read). Closed loop at 128 and 512 streams: TTFA p99 at 128 against runs 47-48 (303, 336 ms),
# and the new per-level talker_gc_share / codec_gc_share (how much of each engine process's time went to GC). Then
# the open loop at 80 and 96 requests/s against run 46 U (824 and 1,073 listeners; 0% and 2% with a gap).
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 --out /tmp/G; save G
$S --concurrency 800 --arrival-seconds 25 --rates 80 96 --out /tmp/O; save O
