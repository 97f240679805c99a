# The one-GPU call after next_one_gpu_2.sh (nvidia-h200, ~4 minutes): the closed loop at 256 and 384 streams with the
# defaults, to place "real-time streams as requests open at once" between 256 (0 gaps from the first byte in runs 40
# and 43, before the step token budget) and 512 (11-26% gapped, runs 55-58). `underrun_after_first_wave_pct` (new in
# session 15) separates the opening wave's gaps from the steady state's.
source tools/device/setup.sh
stamp start
$S --concurrency 256 384 --out /tmp/R; save R
