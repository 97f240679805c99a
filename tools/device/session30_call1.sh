# Session 30, call 1 (nvidia-h200, ~3 minutes): does a codec tick get cheaper when its small replays run beside its
# largest one on a second CUDA stream?
# Why: run 110 split the GPU's second at 512 streams: the codec's replays 0.41 s, at 22.7 us a frame against 17.4 in
# its 128x15 graph. Run 110's capture-time costs (64x15 17.27 ms, 128x15 33.39) put ~1.1 ms on every replay beyond
# its rows, and a tick of ~80 rows of mixed chunk lengths replays ~4 graphs, one after another (one memory pool).
# Offline (plan_replays over that cost model) fuller ticks gain only 1-2 us a frame, and a tick held for them would
# be broken by a first chunk every ~7 ms at 512 streams; so this call measures the other way to pay the fixed cost
# less: the small replays on a side stream, from graphs captured into a pool of their own.
# tools/bench_codec_overlap.py: the service's default codec build (bf16, its kernels and graphs, max_streams 256),
# the small buckets (<= 64) captured again in a second pool; ticks of 40, 81, 128 and 200 rows (62% 15-frame rows,
# the rest 2-12 frames), four compositions each, timed serial and overlapped; plus a check that both leave the same
# audio and state.
# Prediction: check equal; overlapped / serial 0.80-0.92 at 81 rows (the small replays' fixed part hidden under the
# 15-frame replay), 0.85-0.95 at 128-200 rows, 0.75-0.90 at 40 rows.
# Rule, written before the run: build the side stream into the codec engine (then A/B it in the stack) if the median
# ratio at 81 rows is <= 0.92 and the check passes; otherwise record it and leave the codec as it is.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec_overlap.py --out $OUT/bench_codec_overlap.json 2>&1 | grep -v "^\[" || echo "TOOL FAILED"
stamp done
