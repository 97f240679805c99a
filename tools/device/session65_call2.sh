# Run 235 (session 65, call 2) = next_one_gpu_2.sh as of 2f98e22 (right after run 234, same warm machine).
# Right after next_one_gpu.sh on the same warm machine (~5 minutes): the one-GPU stack under MPS with the service's
# default codec (conv1_kernel off) at 128 and 512 streams opened at once, 4 rounds: the other side of next_one_gpu.sh's
# stack (its prediction and rule are there).
source tools/device/setup.sh
stamp start
$S --mps --rounds 4 --concurrency 128 512 --level-timeout 150 --out /tmp/default; save default
