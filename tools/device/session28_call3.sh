# Session 28, call 3 (nvidia-h200, ~6 minutes; cut to the 512 level before it ran: 600 s of device time were left after
# refused starts): the talker's asynchronous scheduling on a GPU it shares with the codec,
# A/B in the stack on one machine, with the GPU's utilization.
# Why: run 110 found the GPU idle ~11% of the time at 512-1,024 streams (nvidia-smi 89-91%): both processes between
# steps at once. `async_scheduling` queues the talker's next step before reading the previous one back, so the GPU has
# talker work while the host hands out frames. serve turns it on only for a talker with a GPU of its own: on one H200
# in session 7 (runs 29-30, a codec ~2x slower than today's) it gave no gain and the codec's chunks waited longer.
# A = today's default (sync on a shared GPU), B = OMNI_TALKER_ASYNC_SCHEDULING=1; each its own stack, A first.
# Prediction: B's utilization 92-97% at 512 (A 88-91%); B's audio-s/s at 512 +1 to +5% over A's; B's talker step
# shorter or equal, its codec tick longer (the talker's queued kernels take GPU turns from the codec); no gap at 512 in
# either.
# Rule, written before the run: serve turns async scheduling on for a talker sharing its GPU too if B's 512-stream
# audio-s/s is >= 103% of A's with no gapped request (800 at once would then be the next call's check). Otherwise it
# stays as it is.
source tools/device/setup.sh
stamp start
$S --concurrency 512 --level-timeout 120 --out /tmp/A; save A
OMNI_TALKER_ASYNC_SCHEDULING=1 $S --concurrency 512 --level-timeout 120 --out /tmp/B; save B
for x in A B; do python3 -c "import json, sys
for r in json.load(open('/tmp/$x/results.json'))['rows']:
    print('$x', r['concurrency'], round(r['audio_s_per_s'], 1), r['requests_with_underrun'], round(r.get('gpu0_util_pct', -1), 1),
          round(r['talker_step_ms'], 2), round(r['codec_tick_ms'], 2), round(r.get('codec_planned_share', -1), 3))"; done
