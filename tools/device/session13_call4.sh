# Session 13, call 4 (one H200): in the opening wave at 128 streams the codec's second tick took ~99 ms (first chunks
# ready at 46-73 ms reached the gateway at 181-239 ms) while the talker ran its prefills: the two processes
# time-slice the GPU. Under MPS their kernels can run together. MPS first, then the same without it on this machine.
source tools/device/setup.sh
stamp start
$S --mps --concurrency 128 512 --out /tmp/M; save M
$S --concurrency 128 512 --out /tmp/N; save N
