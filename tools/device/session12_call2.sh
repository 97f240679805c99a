# Session 12, call 2 (one H200, ~8 minutes, right after call 1 on the same machine): the A/B again in the other
# order at 128 and 512 streams, then a stack sized for 768 streams with the talker graph buckets 512 and 640.
source tools/device/setup.sh
stamp start
OMNI_TALKER_DECODE_IN_PREFILL_STEP=false $S --concurrency 128 512 --out /tmp/Y2; save Y2
$S --concurrency 128 512 --out /tmp/X2; save X2
$S --concurrency 512 768 --out /tmp/Z; save Z
