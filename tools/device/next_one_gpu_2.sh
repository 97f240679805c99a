# One-GPU call after next_one_gpu.sh (nvidia-h200, ~6 minutes; its F is the default at 800 on the same machine): a
# busy first chunk of 4 frames at 800 requests open at once, with the lead floor on (today's default).
# Run 66 (floor on, 3-frame first chunk): 40% of requests gapped from the first byte, 8% with a 100 ms buffer, 32% after
# the opening wave; the first gap comes early in a request (the first chunk and the floor's first early chunks, where
# there is least lead). With 44 ms steps a fourth frame gives every later chunk 80 ms more lead for one more step
# (~44 ms) of time to first audio.
# Prediction: 800 streams with 4 frames: gaps 40% -> under 20% (under 4% with the buffer), TTFA p50 +40-60 ms, early
# chunks per request fewer (5.6 -> ~4). At 512 (a 4-frame first chunk there too): gaps stay 0%, TTFA p50 +~30 ms.
# Rule, written before the run: a second busy tier (4 frames from ~640 requests held) is worth building if the
# 800-stream gapped share at least halves; 4 frames everywhere above 256 only if 512 also loses no more than 30 ms of
# TTFA p50 against next_one_gpu.sh's D1.
source tools/device/setup.sh
stamp start
OMNI_TALKER_BUSY_INITIAL_CHUNK_FRAMES=4 $S --concurrency 800 --level-timeout 150 --out /tmp/E4; save E4
OMNI_TALKER_BUSY_INITIAL_CHUNK_FRAMES=4 $S --concurrency 512 --out /tmp/E4b; save E4b
python3 tools/compare_runs.py busy4=/tmp/E4,/tmp/E4b
