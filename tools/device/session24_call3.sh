# Session 24 call 3 (runs 89+): tools/device/next_one_gpu_3.sh as written in session 23, unchanged.
# One-GPU call (nvidia-h200, ~4 minutes), right after next_one_gpu.sh on the same machine: steady chunks of 25 frames
# instead of 15 (talker chunk_frames 25; codec graph chunk lengths 1, 4, 8, 15, 25 and merge_chunk_frames 25, so
# they replay from graphs and merge), with the fast sine, against next_one_gpu.sh's FS stack.
# Why: the codec sets the pace at 512 streams (runs 87-88) and a step pays ~7.2 ms at 128 rows whatever its length
# (run 80's fit). A 125-frame request is 4 + 2 + 4 + 8 + 15 x 7 + 2: ~12 codec rows (11.9 measured); with 25-frame
# steady chunks it is 4 + 2 + 4 + 8 + 25 x 4 + 7: 9 rows, so fewer ticks for the same frames.
# Prediction: codec rows per request 11.9 -> 9.0-9.6, codec ticks per second -15-25%, audio-s/s at 512 +2-5% over FS,
# no gap, TTFA p50 within 30 ms (first chunks unchanged); 800: gapped share within FS's + 3 points.
# Rule, written before the runs, only if next_one_gpu.sh turned the fast sine on (otherwise for the record): 25-frame
# steady chunks become the defaults (talker chunk_frames 25, codec graph_chunk_lengths + 25, merge_chunk_frames 25)
# if at 512 there is no gap at >= 102% of FS's audio-s/s and at 800 the gapped share is at most FS's + 3 points.
source tools/device/setup.sh
stamp start
OMNI_CODEC_FAST_SINE=1 OMNI_TALKER_CHUNK_FRAMES=25 OMNI_CODEC_GRAPH_CHUNK_LENGTHS=1,4,8,15,25 \
    OMNI_CODEC_MERGE_CHUNK_FRAMES=25 $S --concurrency 512 800 --level-timeout 150 --out /tmp/C25; save C25
[ -d /tmp/FS ] && python3 tools/compare_runs.py fast_sine=/tmp/FS chunks25=/tmp/C25
