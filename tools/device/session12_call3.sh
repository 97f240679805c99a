# Session 12, call 3 (one H200, ~7 minutes): decode_in_prefill_step on and off once more, at 256 and 512 streams, to
# see whether the gaps at 512 (on 44% and 47%, off 22% and 39% in calls 1-2) follow the setting or the run.
source tools/device/setup.sh
stamp start
$S --concurrency 256 512 --out /tmp/X3; save X3
OMNI_TALKER_DECODE_IN_PREFILL_STEP=false $S --concurrency 256 512 --out /tmp/Y3; save Y3
