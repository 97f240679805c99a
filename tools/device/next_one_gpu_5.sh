# One-GPU call (nvidia-h200, ~5 minutes), after next_one_gpu_2.sh and _3.sh (a floor on the lead costs no TTFA; this
# does): more first-chunk frames at 800 requests open at once.
# Run 62: 800 requests with 3-frame first chunks played with a gap in 89% of requests (75% with a 100 ms buffer), after
# the opening wave too (88%): the talker steps 44 ms at ~726 rows, so chunk 4 (after 3 + 2 + 4 frames played, 14
# generated after the first chunk) has 720 - 14 x 44 = ~100 ms of slack before the codec's ~86 ms ticks. 5 frames give
# it 880 - 616 = ~260 ms, and the first steady chunk (19 frames played, 29 generated) ~240 ms.
# Prediction: with 5 frames at 800 streams gaps 89% -> under 30% (under 10% with the buffer), TTFA p50 +~90 ms (two
# steps); 4 frames in between. If so, the busy size should grow with the step time (or the load), not stay at 3.
source tools/device/setup.sh
stamp start
OMNI_TALKER_BUSY_INITIAL_CHUNK_FRAMES=5 $S --concurrency 800 --level-timeout 150 --out /tmp/E5; save E5
OMNI_TALKER_BUSY_INITIAL_CHUNK_FRAMES=4 $S --concurrency 800 --level-timeout 150 --out /tmp/E4; save E4
python3 tools/compare_runs.py busy5=/tmp/E5 busy4=/tmp/E4
