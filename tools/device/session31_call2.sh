# Session 31, call 2 (nvidia-h200, ~7 minutes): the kernel count with `history_kernel` on (now the default, run 117:
# graph step 1x1 -15.3%, 128x1 -8.9%, 128x2 -6.5%, 128x15 -1.1% in one process, every check bitwise) and the
# one-GPU stack at 512 streams with it. Call 1 ran out of time before its second census.
# Predictions: 1x1 replay 438 -> 330-350 kernels (run 117's census without it: 438 at 1x1, 463 at 128x15), 1x1
# replay 1.187 -> 0.95-1.05 ms. Stack at 512 streams: 1,400-1,460 audio-s/s (run 115: 1,408.4 at GPU 90.0%), no gap.
# No rule: the default changed on call 1's A/B; this measures what it does in the stack.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec_ticks.py --kernels 1x1 128x15 --rows 40 --ticks 1 --iters 3 \
    --out $OUT/kernels_1.json 2>&1 | grep -E '^\{"(device|kernels|check)' | cut -c1-600 || echo "TOOL FAILED"
stamp kernels
$S --concurrency 512 --level-timeout 150 --out /tmp/H; save H
python3 -c "import json
for r in json.load(open('/tmp/H/results.json'))['rows']:
    print('H', r['concurrency'], round(r['audio_s_per_s'], 1), r['requests_with_underrun'], round(r.get('gpu0_util_pct', -1), 1),
          round(r['talker_step_ms'], 2), round(r['talker_batch'], 1), round(r['codec_tick_ms'], 2), round(r['codec_batch'], 1),
          round(r.get('codec_ticks_per_s') or -1, 1), round(r.get('codec_planned_share', -1), 3),
          round(r.get('codec_replayed_per_frame') or -1, 3), round(r.get('ttfa_p50_s', -1), 3), round(r.get('ttfa_p99_s', -1), 3))"
