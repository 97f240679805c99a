# One-GPU call (nvidia-h200, ~8 minutes), after next_one_gpu.sh on the same machine: the codec's coalescing
# (min_batch 128, max_wait_ms 40: a tick waits up to 40 ms for 128 ready streams, never while a first chunk waits),
# built in session 2 and never measured on a GPU, at 512 and 800 streams; then 128 streams with and without it.
# Until session 22 the window counted from the oldest pending chunk's arrival: under load that chunk came during the
# previous tick, so the window had run out and no tick waited. It now counts from when the tick could start.
# Why (runs 78-80, session 22): at 512 streams on one GPU the talker sets the pace, and the codec, busy 0.95, decodes
# whatever is ready when a tick starts: 13.7 ticks/s of ~96 rows, each paying a step's fixed part (~7.2 ms at 128
# rows, run 80's fit: 7.2 ms + 2.2 ms a frame). When the codec's step got 13% shorter (fast sine) it ticked 18.4
# times a second with 73 rows and the talker's step did not move. Fewer, fuller ticks leave the GPU to the talker
# for longer stretches and pay the fixed part less often (~1,180 chunks/s / 128 = ~9 ticks/s).
# Prediction: at 512 ticks/s 13.7 -> 9-10.5, rows per tick -> 115-128, codec busy 0.95 -> 0.80-0.90, talker step
# -3-5%, audio-s/s +2-4% over next_one_gpu.sh's default stack; TTFA p50 within 20 ms (first chunks do not wait); 800
# gapped share inside the default's spread (1-9%); 128 streams TTFA p99 within 15 ms of the same machine's default.
# Rule, written before the runs: min_batch 128 / max_wait_ms 40 become the codec's defaults (CodecConfig and the H200
# profile) if at 512 there is no gap at >= 102% of next_one_gpu.sh's default audio-s/s, at 800 the gapped share is
# at most the default's + 3 points, and at 128 the TTFA p99 is at most the same machine's default's + 15 ms.
source tools/device/setup.sh
stamp start
export_coalesce="OMNI_CODEC_MIN_BATCH=128 OMNI_CODEC_MAX_WAIT_MS=40"
env $export_coalesce $S --concurrency 512 800 --level-timeout 150 --out /tmp/CO; save CO
env $export_coalesce $S --concurrency 128 --out /tmp/CO128; save CO128
$S --concurrency 128 --out /tmp/D128; save D128
[ -d /tmp/D ] && python3 tools/compare_runs.py default=/tmp/D,/tmp/D128 coalesce=/tmp/CO,/tmp/CO128
