# One-GPU call after next_one_gpu_2.sh (nvidia-h200, ~7 minutes; same warm machine as next_one_gpu.sh, whose D1 and
# D2 are the default's stacks to compare with): the 200 ms lead floor (OMNI_TALKER_MIN_LEAD_MS) at 128 and 512
# streams, and at 512 with 2-frame first chunks under load too (OMNI_TALKER_BUSY_STREAMS=0): the floor may do what the
# busy 3-frame first chunk does, without its extra step of time to first audio (run 60: TTFA p50 408 -> 459 ms).
# At 128 streams steps are ~20 ms in the stack, so a stream's lead grows from its second chunk: prediction ~0 early
# chunks and TTFA as the default (the first chunk is not touched). At 512 (~30 ms steps, 3-frame first chunks) the
# default gapped 4% and 6% from the first byte (runs 63-64, 0% with the buffer): prediction <= 2%, ~0.5-1 early chunks
# per request, audio-s/s within 3% of the default. With 2-frame first chunks and the floor: gaps <= 6% (a 2-frame
# chunk leaves 160 ms of audio: the floor acts from the second chunk on), TTFA p50 ~50 ms under the default's.
# The rule for the floor is in next_one_gpu_2.sh's header; busy_streams 0 with the floor replaces the busy first chunk
# only if its 512-stream gaps (first byte and buffered) are no more than the default's and its TTFA p50 is lower.
source tools/device/setup.sh
stamp start
OMNI_TALKER_MIN_LEAD_MS=200 $S --concurrency 128 512 --out /tmp/G1; save G1
OMNI_TALKER_MIN_LEAD_MS=200 OMNI_TALKER_BUSY_STREAMS=0 $S --concurrency 512 --out /tmp/G2; save G2
python3 tools/compare_runs.py min_lead_200=/tmp/G1 min_lead_200_first2=/tmp/G2
