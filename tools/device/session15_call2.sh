# Session 15, call 2 (run 56): next_one_gpu_2.sh as written in session 14.
# The one-GPU call after next_one_gpu.sh (nvidia-h200, ~4 minutes): session 14's default (step token budget 1024) in
# the open loop at 80, 96 and 104 requests/s (run 49 with session 13's: 822 and 1,086 listeners, 0% and 1% of
# requests with a gap; run 47: 104/s 1,095 listeners, 13%).
source tools/device/setup.sh
stamp start
$S --concurrency 800 --arrival-seconds 25 --rates 80 96 104 --out /tmp/O; save O
