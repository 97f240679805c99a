# Session 30, call 3 (nvidia-h200, ~8 minutes): what a codec replay's fixed ~1.2 ms is made of; today's stack at
# 128 streams with the new replay planner.
# Why: runs 114-115 put ~0.07 s of the GPU's second at 512 streams in the codec replays' fixed cost (a 1x1 replay
# 1.19 ms) and read it as the step's kernel count, unmeasured. bench_codec_ticks --kernels profiles one eager
# codec_step over a graph's own buffers and one replay of it, and counts the CUDA kernels by name. And the planner
# changed most for small ticks (40 rows: -5 to -9%), which is where 128 streams run (~25-row ticks): a stack at 128
# streams reads today's time to first audio there (DESIGN row: <= 250 ms p99).
# Prediction: 1x1 300-600 kernels, the replay the same count as the eager step, their summed time 0.6-1.0 ms of the
# 1.19; 128x15 the same count. Stack at 128 streams: TTFA p99 180-240 ms, no gap, 800-900 audio-s/s.
# No rule: a measurement; nothing changes on its result.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec_ticks.py --kernels 1x1 1x15 128x1 128x15 --rows 81 --ticks 1 --iters 5 --side-buckets 1 \
    --out $OUT/bench_codec_kernels.json 2>&1 | grep -v "^\[" || echo "TOOL FAILED"
stamp kernels
$S --concurrency 128 --level-timeout 120 --out /tmp/B; save B
python3 -c "import json
for r in json.load(open('/tmp/B/results.json'))['rows']:
    print('B', r['concurrency'], round(r['audio_s_per_s'], 1), r['requests_with_underrun'], round(r.get('gpu0_util_pct', -1), 1),
          round(r['talker_step_ms'], 2), round(r['talker_batch'], 1), round(r['codec_tick_ms'], 2), round(r['codec_batch'], 1),
          round(r.get('codec_ticks_per_s') or -1, 1), round(r.get('codec_planned_share', -1), 3),
          round(r.get('codec_replayed_per_frame') or -1, 3), round(r.get('ttfa_p50_s', -1), 3), round(r.get('ttfa_p99_s', -1), 3))"
