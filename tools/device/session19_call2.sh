# Session 19, call 2 (nvidia-h200): next_one_gpu_2.sh as written at the end of session 18 (header below).
# One-GPU call after next_one_gpu.sh (nvidia-h200, ~9 minutes; its F is the default at 800 on the same machine): at
# 800 requests open at once, a busy first chunk of 4 frames, and a lead floor of 300 ms, each against today's default
# (the 200 ms floor and 3-frame busy first chunks).
# Run 66 (default now): 40% of requests gapped from the first byte, 8% with a 100 ms buffer, 32% after the opening
# wave; the gaps are short (median 49 ms of silence per gapped request against 279 ms with the floor off, run 65) and
# come early (first gap after 0.4-1.9 s of audio), where the codec's ticks (139 ms at 236 rows) and the wait for one
# can exceed the 200 ms of lead the floor keeps. Two ways to more lead: a fourth first-chunk frame (80 ms more for
# every later chunk, for one more ~44 ms step of TTFA) or a higher floor (more early chunks: more codec rows, 13.4 per
# request at 200 against 12.0 without).
# Prediction: busy 4 frames: gaps 40% -> under 20% (under 4% with the buffer), TTFA p50 +40-60 ms. Floor 300: gaps
# 40% -> under 25%, early chunks per request 5.6 -> ~7, codec rows per request ~14, TTFA p50 unchanged within the
# spread, audio-s/s within 3%. At 512 with 4 frames: gaps stay 0%, TTFA p50 +~30 ms.
# Rules, written before the run: a second busy tier (4 frames from ~640 requests held) is worth building if busy 4
# halves the 800-stream gapped share; 4 frames from 256 (in place of 3) only if 512 also loses no more than 30 ms of
# TTFA p50 against next_one_gpu.sh's D1. A floor of 300 becomes the default if it halves the 800-stream gapped share
# and keeps >= 97% of the audio-s/s (then next_one_gpu.sh's 128/512 levels are run again with it).
source tools/device/setup.sh
stamp start
OMNI_TALKER_BUSY_INITIAL_CHUNK_FRAMES=4 $S --concurrency 800 --level-timeout 150 --out /tmp/E4; save E4
OMNI_TALKER_MIN_LEAD_MS=300 $S --concurrency 800 --level-timeout 150 --out /tmp/L300; save L300
OMNI_TALKER_BUSY_INITIAL_CHUNK_FRAMES=4 $S --concurrency 512 --out /tmp/E4b; save E4b
python3 tools/compare_runs.py busy4=/tmp/E4,/tmp/E4b min_lead_300=/tmp/L300
