# Session 16, call 4 (run 63; nvidia-h200, ~7 minutes): the first chunk sized when it falls due (FirstChunkSizing
# after run 62: a stream holding 2 frames sends them unless the talker holds 256 or more requests, then waits for 3),
# at 128, 384 and 512 streams; then the 2-frame first chunk (OMNI_TALKER_BUSY_STREAMS=0) at 512 on the same machine.
# Run 62 sized it at admission: the first requests of the 512 burst were admitted before the rest had arrived and kept
# 2 frames (mean 2.9), and 8% of requests gapped (4% with a 100 ms buffer) against 1% (0%) for a fixed 3 in run 60.
# Predictions: 128 streams: talker_first_chunk_frames 2.0, TTFA p99 in 218-249 (runs 54-62); 384 and 512: frames
# ~3.0, requests with a gap from the first byte <= 3%; 512 TTFA p50 ~440-460 ms; the 2-frame run at 512: 11-26% gapped
# (runs 55-60).
# Rule, written before the run: the load-sized first chunk stays the default if the 128-stream p99 is <= 250 ms and
# requests with a gap are <= 5% at 384 and 512 streams and fewer than the 2-frame run's at 512.
source tools/device/setup.sh
stamp start
$S --concurrency 128 384 512 --out /tmp/F; save F
OMNI_TALKER_BUSY_STREAMS=0 $S --concurrency 512 --out /tmp/T; save T
python3 tools/compare_runs.py sized_when_due=/tmp/F two_frames=/tmp/T
