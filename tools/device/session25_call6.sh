# Session 25 call 6: call 4's stack (all four codec kernels on) at 1, 16 and 64 streams, for DESIGN's one-stream
# TTFA row (last measured in run 41: 34-35 ms) and the low levels. No rule: for the record.
# Prediction: 1 stream TTFA p50 30-40 ms; 64 streams TTFA p99 120-180 ms; no gap.
source tools/device/setup.sh
stamp start
OMNI_CODEC_TRANSFORMER_KERNELS=1 OMNI_CODEC_RVQ_KERNEL=1 OMNI_CODEC_ATTENTION_KERNEL=1 \
    $S --concurrency 1 16 64 --level-timeout 100 --out /tmp/L; save L
