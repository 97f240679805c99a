# Session 29, call 1 (nvidia-h200, ~8 minutes): the codec's asynchronous scheduling on the GPU it shares with the
# talker, A/B/C in the stack on one machine at 512 streams, with the GPU's utilization; first its exactness on CUDA.
# Why: run 110 found the GPU idle ~11% of the time at 512-1,024 streams. Run 111 gave the idle time to the talker
# (its async scheduling): utilization 88 -> 94%, +2.4% audio-s/s, but the codec ticked 30% less often and 11% of
# requests gapped. The codec is what listeners wait on, so this call gives the idle time to it instead:
# `async_scheduling` for the codec (services/codec/engine.py) queues tick N+1 before tick N's audio is read back,
# packed and handed out, so the codec always has a decode queued while it has chunks.
# A = today's default; B = OMNI_CODEC_ASYNC_SCHEDULING=1; C = B + OMNI_TALKER_ASYNC_SCHEDULING=1 (both processes
# always queued: the GPU's time slices shared between them). Each its own stack, in that order.
# Prediction: check_codec_async passes in both modes on CUDA (graphs). B: utilization 92-96% (A 88-91%), audio-s/s +1
# to +4% over A, more codec ticks a second with fewer rows each, no gapped request. C: utilization 95-99%, +2 to +6%
# over A; gapped requests fewer than run 111's 11%, maybe none.
# Rule, written before the run: the codec's async_scheduling becomes its default if B's audio-s/s >= 102% of A's,
# B's utilization >= A's + 2 points and B has no gapped request. serve also turns the talker's on for a shared GPU if
# C >= 103% of A and >= 101% of B with no gapped request. Otherwise they stay as they are.
source tools/device/setup.sh
stamp start
python3 tools/check_codec_async.py --device cuda --out $OUT/check_codec_async.json || echo "CHECK FAILED"
stamp check
$S --concurrency 512 --level-timeout 120 --out /tmp/A; save A
OMNI_CODEC_ASYNC_SCHEDULING=1 $S --concurrency 512 --level-timeout 120 --out /tmp/B; save B
OMNI_CODEC_ASYNC_SCHEDULING=1 OMNI_TALKER_ASYNC_SCHEDULING=1 $S --concurrency 512 --level-timeout 120 --out /tmp/C; save C
for x in A B C; do python3 -c "import json, sys
for r in json.load(open('/tmp/$x/results.json'))['rows']:
    print('$x', r['concurrency'], round(r['audio_s_per_s'], 1), r['requests_with_underrun'], round(r.get('gpu0_util_pct', -1), 1),
          round(r['talker_step_ms'], 2), round(r['codec_tick_ms'], 2), round(r.get('codec_ticks_per_s') or -1, 1),
          round(r.get('codec_planned_share', -1), 3))"; done
