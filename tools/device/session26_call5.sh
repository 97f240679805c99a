# Session 26 call 5 (nvidia-h200, ~3 minutes), after call 3's rule turned the residual SnakeBeta kernel on: it at 1
# and 128 streams, for the record (TTFA). Prediction: 1 stream TTFA p50 28-34 ms; 128 TTFA p99 180-230 ms.
source tools/device/setup.sh
stamp start
env OMNI_CODEC_RESIDUAL_SNAKE_KERNEL=1 $S --concurrency 1 128 --level-timeout 100 --out /tmp/R1; save R1
