# Session 16, call 3 (run 62; nvidia-h200, ~7 minutes): the first chunk sized by the talker's load (FirstChunkSizing,
# the new default: 3 frames for a stream admitted while the talker holds 256 or more requests, else 2), at 128, 256,
# 384 and 512 streams in one stack; then 800 requests open at once, in a stack of its own with 800 slots (the DESIGN's
# "real-time streams on one H200 >= 800", counted as requests open at once).
# Run 60 (this session, call 1): a fixed 3-frame first chunk at 512 streams cut requests with a gap from the first byte
# 24% -> 1% (0% with a 100 ms buffer) and cost TTFA p50 +51 ms; at 128 it cost p99 218 -> 242 ms for no gap to cut.
# Predictions: at 128 streams the 2-frame default (talker_first_chunk_frames 2.0; TTFA p99 in 218-249, the range of
# runs 54-60); at 256, 384 and 512 talker_first_chunk_frames ~3.0 and gaps from the first byte <= 3% at each; at 512
# TTFA p50 ~460 ms (run 60: 408 with 2 frames, 459 with 3).
# At 800 streams: throughput ~1,150 audio-s/s (RTF p50 ~0.7), TTFA p50 ~1 s; chunk 4's slack is
# 720 - 14 x step - codec jitter (ms), ~90 ms with ~45 ms steps, so many gaps (> 20%) are predicted there.
# Rule, written before the run: the load-sized first chunk stays the default if the 128-stream p99 is <= 250 ms and
# requests with a gap are <= 5% at 256, 384 and 512 streams.
source tools/device/setup.sh
stamp start
$S --concurrency 128 256 384 512 --out /tmp/A; save A
$S --concurrency 800 --level-timeout 150 --out /tmp/E; save E
python3 tools/compare_runs.py load_sized_first_chunk=/tmp/A,/tmp/E
