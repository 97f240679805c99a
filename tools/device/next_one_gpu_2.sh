# One-GPU call after next_one_gpu.sh (nvidia-h200, ~6 minutes): a floor on each listener's lead (ChunkLead,
# OMNI_TALKER_MIN_LEAD_MS, session 17, off by default) at 800 requests open at once, against the default on the same
# machine. Run 62 (800 slots, default chunks): 1,153.2 audio-s/s, RTF p50 0.68, 89% of requests gapped from the first
# byte (75% with a 100 ms buffer), after the opening wave too (88%). By the arithmetic of 44 ms steps and a 3-frame
# first chunk with the 2/4/8/15 ramp, the chunks of 8 and the first of 15 fall due with ~100 and ~84 ms of lead, under
# an 86 ms codec tick plus the wait for one. With a 200 ms floor those chunks go out early, as soon as what was sent
# would leave a listener under 200 ms (at least 2 frames): ~2 more chunks per request in the ramp, none after it
# (44 ms steps add 36 ms of lead per frame once chunks are 15 frames).
# Prediction: with 200 ms, gaps from the first byte 89% -> under 30% (under 10% with the buffer), TTFA unchanged (the
# first chunk is not touched), talker_early_chunks_per_request ~1-3, audio-s/s within 5% of the default (more codec
# rows per request: codec_rows_per_request up by about the early chunks).
# Rule, written before the run: min_lead_ms 200 becomes the default if here the gapped share at least halves and, in
# next_one_gpu_3.sh, 512 streams gap no more than the default and keep >= 97% of its audio-s/s and the 128-stream
# TTFA p99 stays <= 262 ms (the highest of the default's nine stacks).
source tools/device/setup.sh
stamp start
$S --concurrency 800 --level-timeout 150 --out /tmp/F0; save F0
OMNI_TALKER_MIN_LEAD_MS=200 $S --concurrency 800 --level-timeout 150 --out /tmp/F200; save F200
python3 tools/compare_runs.py default=/tmp/F0 min_lead_200=/tmp/F200
