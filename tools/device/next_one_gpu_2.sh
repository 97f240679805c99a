# Second in line (after session 69; either card, ~8 minutes with the start): the one-GPU stack under MPS (1.7B, 512
# streams opened at once, 3 rounds) with the codec's transposed_kernel on (OMNI_CODEC_TRANSPOSED_KERNEL=1: the
# upsamplers of blocks 0, 2 and 3 as the implicit GEMM with their first SnakeBeta) against today's defaults (off),
# alternating on / off / on / off on one machine.
# Why: run 244 (an H100) had the 128x4 replay 1.8% shorter by kernel with it (8,535.0 against 8,689.7 us; the tick mix
# at 128 rows -0.9%), where run 242's graph-step A/B had -0.3 / +0.2% at 15 / 4 frames. The stack is what counts.
# Prediction: the codec's tick at 512 streams 1-3% shorter with it; audio-s/s within -1 to +2%; none gapped.
# Rule: transposed_kernel goes on by default if the 512-stream side with it is >= 1% higher in both pairs and none
# gapped or failed; else it stays off with these numbers.
source tools/device/setup.sh
stamp start
for side in on off on off; do
    if [ $side = on ]; then export OMNI_CODEC_TRANSPOSED_KERNEL=1; else unset OMNI_CODEC_TRANSPOSED_KERNEL; fi
    $S --mps --rounds 3 --concurrency 512 --level-timeout 120 --out /tmp/$side; save $side
done
