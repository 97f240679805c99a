# Session 12, the two-GPU call (nvidia-h200-x2, ~6 minutes with the 430 s left): today's defaults on two GPUs at 128
# and 512 streams, then two codec processes at 512. A shorter next_two_gpus.sh.
source tools/device/setup.sh
S2="${S/--gpus 1/--gpus 2}"
stamp start
$S2 --concurrency 128 512 --out /tmp/A; save A
$S2 --concurrency 512 --codec-replicas 2 --ready-timeout 300 --out /tmp/B; save B
