# Session 29, call 2 (nvidia-h200, ~6 minutes; cut to A and M before it ran: 847 s of device time left after four
# refused starts): the talker and codec processes sharing the GPU through CUDA MPS, A/B/C
# in the stack at 512 streams on one machine; first check_codec_async on CUDA again (call 1's failed on the tool's own
# graph buckets, larger than its 12 streams: fixed).
# Why: call 1 (run 112) gave the GPU's idle time to the codec (async scheduling): utilization 90.8 -> 93.0% but its
# ticks ran at 46 rows instead of 73 and cost more per frame: 1,414.8 -> 1,318.2 audio-s/s; with the talker's async
# scheduling too, 95.7% and 1,372.3, no gap. Two processes on one GPU without MPS take turns in time slices: their
# kernels never run at once, so the talker's bandwidth-bound attention and small-batch kernels and the codec's
# convolutions cannot fill each other's idle SMs, and a context switch separates each turn. MPS runs both processes'
# kernels in one hardware context, side by side. It changes no setting of the card: a daemon started here with its
# own pipe and log directories serves only the processes given them (the M stacks), and is told to quit after them.
# A = today's default; M = today's default under MPS; MC = M with both processes' async scheduling (under MPS a
# queued step of one no longer takes turns from the other, so keeping both queued may pay now).
# Prediction: the check passes in both modes. M: +3 to +15% audio-s/s over A, utilization >= A's, talker step and
# codec tick both shorter, no gapped request. MC: >= M, no gapped request.
# Rule, written before the run: if M or MC is >= 105% of A with no gapped request, `omni serve` gets an option to run
# its GPU processes under an MPS daemon of its own (and the one-H200 profile turns it on); the async settings follow
# MC only if MC >= 102% of M with no gapped request. Otherwise MPS is recorded as measured and nothing changes.
# (Cut: MC does not run in this call; the rule stands for M.)
source tools/device/setup.sh
stamp start
python3 tools/check_codec_async.py --device cuda --out $OUT/check_codec_async.json || echo "CHECK FAILED"
stamp check
$S --concurrency 512 --level-timeout 120 --out /tmp/A; save A
if command -v nvidia-cuda-mps-control; then
    mkdir -p /tmp/mps/pipe /tmp/mps/log
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps/log
    nvidia-cuda-mps-control -d && echo "MPS daemon started"
    $S --concurrency 512 --level-timeout 120 --out /tmp/M; save M
    grep -c "New client" /tmp/mps/log/control.log
    echo quit | nvidia-cuda-mps-control
    tail -n 4 /tmp/mps/log/control.log; cp /tmp/mps/log/control.log $OUT/mps_control.log
else
    echo "no nvidia-cuda-mps-control on this machine"
fi
for x in A M MC; do [ -f /tmp/$x/results.json ] && python3 -c "import json, sys
for r in json.load(open('/tmp/$x/results.json'))['rows']:
    print('$x', r['concurrency'], round(r['audio_s_per_s'], 1), r['requests_with_underrun'], round(r.get('gpu0_util_pct', -1), 1),
          round(r['talker_step_ms'], 2), round(r['talker_batch'], 1), round(r['codec_tick_ms'], 2), round(r.get('codec_ticks_per_s') or -1, 1),
          round(r.get('codec_planned_share', -1), 3))"; done
