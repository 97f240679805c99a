# Session 12, call 1 (one H200, ~7 minutes): a new stream's first frame in the step that completes its prefill
# (decode_in_prefill_step, default on) against the step after it (off), at 1, 128 and 512 streams.
#     bash tools/device/session12_call1.sh 2>&1 | tee $OUT/log.txt
# with kind nvidia-h200 and carry [".whl", ".whl_stack"].
source tools/device/setup.sh
stamp start
$S --concurrency 1 128 512 --out /tmp/X; save X
OMNI_TALKER_DECODE_IN_PREFILL_STEP=false $S --concurrency 1 128 512 --out /tmp/Y; save Y
