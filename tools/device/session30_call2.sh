# Session 30, call 2 (nvidia-h200, ~10 minutes): the codec's replay planner as a dynamic program (the cheapest plan
# by the capture-time costs) against the planner before it, in one process; then today's stack at 512 streams with
# it, reading the codec's padding (`codec_replayed_per_frame`, new).
# Why: run 114 (call 1) timed ticks of 40-200 rows: 22.6 us a frame at 81 rows, 21.9 at 128, 21.2 at 200, against
# 17.4 in a full 128x15 replay; so fuller ticks gain little, and what costs is the short rows padded to longer
# graphs and the replays' fixed ~1.2 ms. The previous planner weighed only two plans (every row padded to the longest,
# or rows by length with spare rows filled); offline, over run 114's measured costs, the cheapest plan (now
# `plan_replays`, a dynamic program over the rows longest first; exact against an exhaustive search in the tests) is
# 0.5-5% cheaper at 81 rows and 4-8% at 40, more with more short rows.
# tools/bench_codec_ticks.py: the service's codec build (bf16, kernels, graphs, max_streams 256); ticks of 40, 81,
# 128 and 200 rows at two mixes (62% and 45% of rows 15 frames, the rest 2-12), four each; each timed serially with
# the previous planner and with today's, and overlapped (run 114's side stream, for the record).
# Prediction: planned / previous 0.92-1.00, the most at 40 rows and the shorter mix; capture sums the same order.
# Stack (512 streams, today's defaults with the new planner; not an A/B: one stack): 1,350-1,460 audio-s/s, no gap,
# codec_replayed_per_frame 1.15-1.35.
# Rule, written before the run: the dynamic-program planner stays if the median planned / previous of every (mix,
# rows) group is <= 1.00 (none above 1.01) and the check passes; otherwise the previous planner comes back.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec_ticks.py --steady-share 0.62 0.45 --out $OUT/bench_codec_ticks.json 2>&1 | grep -v "^\[" \
    || echo "TOOL FAILED"
stamp ticks
$S --concurrency 512 --level-timeout 120 --out /tmp/A; save A
python3 -c "import json
for r in json.load(open('/tmp/A/results.json'))['rows']:
    print('A', r['concurrency'], round(r['audio_s_per_s'], 1), r['requests_with_underrun'], round(r.get('gpu0_util_pct', -1), 1),
          round(r['talker_step_ms'], 2), round(r['talker_batch'], 1), round(r['codec_tick_ms'], 2), round(r['codec_batch'], 1),
          round(r.get('codec_ticks_per_s') or -1, 1), round(r.get('codec_planned_share', -1), 3),
          round(r.get('codec_replayed_per_frame') or -1, 3), round(r.get('ttfa_p50_s', -1), 3), round(r.get('ttfa_p99_s', -1), 3))"
