# Right after next_one_gpu.sh on the same warm machine (~9 minutes), if one of its switches won by its rule: the
# one-GPU stack under MPS with the switches that won (edit the OMNI_CODEC_* list below to those) against the service's
# default, at 128 and 512 streams opened at once, 3 rounds each, one after the other on this machine.
# Prediction: with the switches +2 to +8% audio-s/s at 512 streams (the codec's step is what MPS leaves the talker
# waiting on there), TTFA p99 at 128 within +-10%; none gapped.
# Rule: the switches go on by default if the 512-stream side is not lower; else they stay off with their numbers.
source tools/device/setup.sh
stamp start
OMNI_CODEC_CONV1_KERNEL=1 OMNI_CODEC_CONV2_KERNEL=1 OMNI_CODEC_TRANSPOSED_KERNEL=1 \
    $S --mps --rounds 3 --concurrency 128 512 --level-timeout 120 --out /tmp/switches; save switches
$S --mps --rounds 3 --concurrency 128 512 --level-timeout 120 --out /tmp/default; save default
