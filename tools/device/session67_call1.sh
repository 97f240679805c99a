# Run 237 (session 67, call 1) = next_one_gpu.sh as of 0410351.
# Next one-GPU call (after session 66; either card, ~9 minutes with the start): the one-GPU stack under MPS with the
# codec's conv1_kernel and conv2_kernel (on by default since runs 234-235: the graph step shorter at 128 rows of 1-15
# frames) against both off (the defaults before session 66), at 128 and 512 streams opened at once, 3 rounds each,
# one after the other on this machine.
# Prediction: the default +2 to +8% audio-s/s at 512 streams (the codec's step is what MPS leaves the talker waiting
# on there; run 235: the two together about -9 to -13% of the 128x4-15 step), TTFA p99 at 128 within +-10%; none
# gapped.
# Rule: the two stay on if the 512-stream side with them is not lower; else both go off again with these numbers.
source tools/device/setup.sh
stamp start
OMNI_CODEC_CONV1_KERNEL=0 OMNI_CODEC_CONV2_KERNEL=0 \
    $S --mps --rounds 3 --concurrency 128 512 --level-timeout 120 --out /tmp/without; save without
$S --mps --rounds 3 --concurrency 128 512 --level-timeout 120 --out /tmp/default; save default
