# One-GPU call (nvidia-h200, ~8 minutes): the codec's rows by lead (`max_tick_rows`, session 19, off by default) at 800
# and 512 requests open at once, against today's default on the same machine.
# At 800 (runs 68-71) the codec is busy 96% of the time and ticks 130-161 ms at 210-294 rows: every stream's row
# waits for a whole tick of every other stream's, so a listener near the end of its lead waits behind listeners with
# seconds of it, and the talker's 200 ms floor is spent in the codec's queue (chunk wait 90-107 ms + the tick).
# With OMNI_CODEC_MAX_TICK_ROWS=128 a tick decodes the 128 rows whose listeners are closest to running dry (new
# streams first) and the rest wait for the next tick, merging what they queue meanwhile. bench_stack now reports the
# codec's own count of late rows (`codec_late_rows_per_request`: delivered after a listener who started at the first
# audio ran dry) and `codec_deferred_rows_per_request`.
# Prediction: 800 streams: gapped share (default 13-28%, 0-9% with a 100 ms buffer) under 8% (under 2%), TTFA p50
# 745-753 -> under 650 ms (first rows first), codec rows per request 12.0-12.5 -> under 11.5 (more merging),
# audio-s/s within 3%; 512 streams: no gap, TTFA p50 within +20 ms, audio-s/s within 3%.
# Rule, written before the run: 128 goes into the H200 profile (deploy/qwen3-tts-1.7b-h200.yaml) if at 800 the gapped
# share is under half of the same call's default and at 512 there is no gap at >= 97% of the default's audio-s/s.
source tools/device/setup.sh
stamp start
$S --concurrency 800 --level-timeout 150 --out /tmp/F; save F
OMNI_CODEC_MAX_TICK_ROWS=128 $S --concurrency 800 --level-timeout 150 --out /tmp/C8; save C8
OMNI_CODEC_MAX_TICK_ROWS=128 $S --concurrency 512 --out /tmp/C5; save C5
python3 tools/compare_runs.py default=/tmp/F max_tick_rows_128=/tmp/C8,/tmp/C5
