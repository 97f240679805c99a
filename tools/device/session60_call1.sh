# Run 214 (session 60, call 1) = session 59's next_one_gpu_2.sh with 128 streams put back in both stacks' levels.
# One-GPU call (~7 minutes with the start): the talker as a below-normal-priority MPS client, queueing its steps ahead,
# beside the codec on one GPU; A/B in the stack on one machine.
# Why: run 213 (an H100): the talker queueing ahead on a GPU it time-slices with the codec took 2.7-4.2% more audio-s/s
# at 16-128 streams, but the codec's first chunks waited behind it (after the talker's first chunk 6 -> 69 ms at 16
# streams; TTFA p50 45 -> 96 ms). Separate contexts take turns; under MPS their kernels run side by side, and
# CUDA_MPS_CLIENT_PRIORITY=1 (below normal) makes the talker's work yield to the codec's when both wait. MPS alone was
# measured three times (runs 16, 48, 113: no gain; run 113 -3.9% at 512: the codec's ticks got smaller and dearer), never
# with the talker queued ahead at a lower priority.
# A = today's default; P = bench_stack --mps, OMNI_TALKER_ASYNC_SCHEDULING=1, and a sitecustomize that sets
# CUDA_MPS_CLIENT_PRIORITY=1 in the talker's process only (before its CUDA context). Each its own stack, A first;
# 16, 128 and 512 streams opened at once, 6 rounds.
# Prediction: P against A at 512 streams -5 to +8% audio-s/s (GPU utilization 93% -> 95-98%); TTFA p50 at 16 streams
# within 20% of A's (the codec first). No gapped request in either.
# Rule, written before the run: a served setting for it (the talker's MPS priority and async scheduling under MPS)
# is built and checked at 128 / 800 / 1,024 streams in a later call if P >= 103% of A at 512 streams, P's TTFA p50 at
# 16 <= 120% of A's, and no request of P gaps. Otherwise nothing changes.
source tools/device/setup.sh
stamp start
$S --concurrency 16 128 512 --level-timeout 150 --out /tmp/A; save A
mkdir -p /tmp/prio
cat > /tmp/prio/sitecustomize.py <<'PY'
import os
import sys

# `python -m omni.cli talker ...` has sys.argv ['-m', 'talker', ...] here, before any CUDA context.
if sys.argv[1:2] == ["talker"]:
    os.environ["CUDA_MPS_CLIENT_PRIORITY"] = "1"
    print(f"[mps-priority] talker pid {os.getpid()}: CUDA_MPS_CLIENT_PRIORITY=1", file=sys.stderr, flush=True)
PY
PYTHONPATH=$PYTHONPATH:/tmp/prio OMNI_TALKER_ASYNC_SCHEDULING=1 $S --mps --concurrency 16 128 512 --level-timeout 150 \
    --out /tmp/P; save P
grep -rh "mps-priority\|async_scheduling" /tmp/P/logs/*talker*.log 2>/dev/null | head -3
tail -5 /tmp/P/logs/mps-server.log 2>/dev/null
stamp done
