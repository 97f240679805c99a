# Session 14, call 1 (run 49; written in session 13 as next_one_gpu.sh; nvidia-h200, ~6.5 minutes): session 13's
# defaults (startup heap frozen out of garbage collection, the shared voice-list read). Closed loop at 128 and 512
# streams with the talker's step trace and the codec's tick trace on (one JSON line per step / tick in the logs that
# come back): TTFA p99 at 128 against runs 47-48 (303, 336 ms), the per-level talker_gc_share / codec_gc_share, and
# what the codec's long tick in the opening wave does (run 47: ~99 ms while the talker prefilled). Then the open loop
# at 80 and 96 requests/s against run 46 U (824 and 1,073 listeners; 0% and 2% of requests with a gap), traces off.
source tools/device/setup.sh
stamp start
OMNI_TALKER_TRACE_STEPS=true OMNI_CODEC_TRACE_TICKS=true $S --concurrency 128 512 --out /tmp/G; save G
$S --concurrency 800 --arrival-seconds 25 --rates 80 96 --out /tmp/O; save O
