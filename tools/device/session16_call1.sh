# Session 16, call 1 (run 60; was next_one_gpu_2.sh). The one-GPU call (nvidia-h200, ~7 minutes): "real-time streams as requests open at once".
# Today's defaults gap 11-26% of requests from the first byte at 512 streams (0-6% with a 100 ms buffer; runs 55-58)
# and, before the step token budget, none at 256 (runs 40, 43). The gaps come 0.32-0.64 s into playback: chunk k must
# arrive before the audio ahead of it has played, and its slack is (frames before it) x 80 ms - (its frames) x step -
# (its codec latency - the first chunk's) (docs/perf-notes.md, "A first chunk of 2 frames"). At 512 streams the step
# is ~30 ms and codec latencies differ by up to ~2 ticks of ~70 ms, against 100 ms of slack for chunk 2.
# A first chunk of 3 frames gives every later chunk 80 ms more slack for one more talker step of time to first audio
# (~30 ms at 512 streams, ~14 at 128) - unlike a client buffer of 80 ms, which delays playback by all of it.
# Session 15's per-request records: gapped requests starved 42-58 ms in all on average, most first at 0.64 s (chunk
# 4, whose slack shrinks by 14 steps), mostly in the opening wave; only 1.0-8.2% of requests starved more than 80 ms.
# Prediction: at 512 streams gaps from the first byte ~20% -> under 8%, TTFA p50 +30-40 ms; at 128 streams p99 up by
# ~15 ms (close to the 250 ms target). If so, a first chunk sized by the talker's step time is the change to build.
# The default runs first, as the baseline on the same machine and code: it also measures session 15's gateway change
# (prompts built on the event loop; tools/bench_prepare.py on CPU: a burst of 32 prepared in 13-16 ms instead of
# 25-30). Its prediction: at 128 streams the gateway-to-talker hop p50 ~10 -> ~5 ms and p99 30-46 -> 20-30 ms, with
# `gateway_send` (the gateway's part, new) most of what is left in the opening wave; TTFA p99 ~10 ms lower.
# Then tools/device/next_one_gpu_3.sh (the default at 256 and 384 streams).
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 --out /tmp/D; save D
OMNI_TALKER_INITIAL_CHUNK_FRAMES=3 $S --concurrency 128 512 --out /tmp/I3; save I3
python3 tools/compare_runs.py default=/tmp/D first_chunk_3=/tmp/I3
