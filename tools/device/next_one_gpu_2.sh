# The one-GPU call after next_one_gpu.sh (nvidia-h200, ~8 minutes): "real-time streams as requests open at once".
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
# Then the default at 256 and 384 streams, to place the requests-at-once figure today.
source tools/device/setup.sh
stamp start
OMNI_TALKER_INITIAL_CHUNK_FRAMES=3 $S --concurrency 128 512 --out /tmp/I3; save I3
$S --concurrency 512 256 384 --out /tmp/R1; save R1
