# Session 42 call 1 (run 167) = next_one_gpu.sh as it stood at d3cee8d.
# One-GPU call (nvidia-h200, ~7 minutes), any time: session 41's two settings (skinny_linear_by_shape and
# skinny_linear_dot_32) in the stack at a few streams, on and off together, each twice in the order on, off, off, on
# (one stack each; 1, 4, 16 and 32 streams).
# Why: runs 163-164 A/B'd them on the step alone (1.7B: 1 row -2.5 / -2.1%, 8 rows -2.1 / -1.9%, 16 rows -1.7 /
# -1.2%, 32 rows -5.5 / -5.3%); the stack at 1-32 streams with them is not measured (nor with session 40's
# skinny_linear_dot). At a few streams each request is made as fast as the steps go, so per-stream speed follows the
# step.
# Prediction: 1 stream TTFA p50 within the spread (24-27 ms both ways); audio-s/s at 16 streams +1 to +3% and at 32
# streams +2 to +6% with them, the service's talker step correspondingly shorter. Decides nothing (the step's A/Bs did);
# a figure for the docs.
source tools/device/setup.sh
stamp start
for tag in on1 off1 off2 on2; do
    case $tag in on*) v=1 ;; *) v=0 ;; esac
    OMNI_TALKER_SKINNY_LINEAR_BY_SHAPE=$v OMNI_TALKER_SKINNY_LINEAR_DOT_32=$v $S --concurrency 1 4 16 32 \
        --out /tmp/$tag; save $tag
done
