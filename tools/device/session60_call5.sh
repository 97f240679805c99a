# Run 218 (session 60, call 5) = the one-GPU stack under MPS (`bench_stack --mps`, today's one-GPU layout) with 800
# streams opened at once, 3 rounds: the last ~350 s of the session's device time (~4 minutes with a start).
# Why: runs 216-217 measured serve --mps at 16-512 streams only; DESIGN §8's real-time row is 800 streams opened at
# once with no gap, which the default (time-sliced) stack met on an H100 in run 192 (1,427.2 audio-s/s, none gapped).
# Prediction (an H100): 1,500-1,700 audio-s/s; no more than 1% of requests gapped (under MPS the codec's tick at 512
# streams was 21 ms against 36, so its chunks should keep ahead of playback). No rule: one stack, no A on this machine.
source tools/device/setup.sh
stamp start
$S --mps --rounds 3 --concurrency 800 --level-timeout 120 --out /tmp/S; save S
