# Run 225 (session 62, call 2) = the one-GPU stack under MPS (today's advice, `omni serve --mps`), 1.7B, 512 streams
# opened at once, with the talker's K/V cache in fp8 (OMNI_TALKER_KV_CACHE_DTYPE=fp8) and then without, one machine.
# Why: run 224's rule: the fp8 cache took 9.7-10.2% off the 512-row graph step on an H100 (12.72 -> 11.46 ms).
# Prediction: fp8 against bf16 +3 to +7% audio-s/s at 512 streams (the talker is ~0.53 of the full card's time under
# MPS, run 219), neither gapped; TTFA p50 within 10%.
# No rule: the fp8 cache stays an option (not the reference's bits); the gain goes into its help and the docs.
source tools/device/setup.sh
stamp start
OMNI_TALKER_KV_CACHE_DTYPE=fp8 $S --mps --concurrency 512 --level-timeout 150 --out /tmp/fp8; save fp8
$S --mps --concurrency 512 --level-timeout 150 --out /tmp/bf16; save bf16
