# The one-GPU call after next_one_gpu.sh (nvidia-h200, ~6 minutes): the closed loop at 256 and 384 streams with
# today's defaults, to place "real-time streams as requests open at once" between 256 (0 gaps from the first byte,
# runs 40 and 43, before the step token budget) and 512 (11-26% gapped, runs 55-58). Twice, to see the spread.
source tools/device/setup.sh
stamp start
$S --concurrency 256 384 --out /tmp/R1; save R1
$S --concurrency 256 384 --out /tmp/R2; save R2
