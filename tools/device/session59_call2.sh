# Run 213 (session 59, call 2): the talker's asynchronous scheduling while few streams are held, on a GPU it shares
# with the codec (`async_scheduling_max_streams`, built this session), A/B in the stack on one machine.
# Why: run 212 (an H100): at 16 streams the talker's step in the stack was 6.33 ms against a 4.53 ms replay (its
# process 93% busy on one core, the GPU 74% utilized): ~1.8 ms of host work a step with the GPU waiting. Async
# scheduling hides it, but on a shared GPU at 512 streams it took turns the codec needed (run 111: 11% of requests
# gapped), so it queues ahead only while at most N streams hold a slot. A = today's default (never ahead on a shared
# GPU), B = OMNI_TALKER_ASYNC_SCHEDULING_MAX_STREAMS=128; each its own stack, A first; 16 / 32 / 128 / 512 streams,
# opened at once, 6 rounds.
# Prediction: B against A +10 to +25% audio-s/s at 16 streams and +8 to +20% at 32 (the talker step 6.33 / 7.24 ms ->
# 4.8-5.6 / 5.8-6.6), 0 to +10% at 128 with TTFA p99 within 10% of A's; 512 within 3% of A (held streams past 128 in
# steady state); no gapped request in either.
# Rule, written before the run: async_scheduling_max_streams defaults to 128 if B >= 105% of A at 16 and 32 streams,
# B's TTFA p99 at 128 streams <= 110% of A's, B at 512 >= 98% of A, and no request of B gaps at any level. If only the
# 128-stream condition or a gap at 128 fails, 64 is the next call's candidate. Otherwise it stays 0.
source tools/device/setup.sh
stamp start
$S --concurrency 16 32 128 512 --level-timeout 150 --out /tmp/A; save A
OMNI_TALKER_ASYNC_SCHEDULING_MAX_STREAMS=128 $S --concurrency 16 32 128 512 --level-timeout 150 --out /tmp/B; save B
