# Session 25 call 5: call 4's stack (the window, RVQ, attention and transformer kernels on) again at 512 and 800
# streams, on the same machine, to see whether run 95's 800-stream result (no gapped request of 4,800) repeats.
# No rule: for the record. Prediction: 512 within 3% of run 95's 1,411.4; 800 at most 0.5% gapped.
source tools/device/setup.sh
stamp start
OMNI_CODEC_TRANSFORMER_KERNELS=1 OMNI_CODEC_RVQ_KERNEL=1 OMNI_CODEC_ATTENTION_KERNEL=1 \
    $S --concurrency 512 800 --level-timeout 150 --out /tmp/K2; save K2
