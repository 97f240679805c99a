# Run 221 (session 61, call 3) = the 1.7B one-GPU stack at 800 streams opened at once, 3 rounds, the default
# (time-sliced) stack and then under MPS (`--mps`), one machine.
# Why: run 218 measured `omni serve --mps` at 800 streams (1,601.6 audio-s/s, none gapped) with no default stack beside
# it; run 192's default figure (1,427.2) came from another H100.
# Prediction (an H100): MPS +5 to +15% against the default; none gapped in either; TTFA p99 lower under MPS.
# No rule: the layout is decided (runs 216-217); this is DESIGN §8's real-time row side by side.
source tools/device/setup.sh
stamp start
$S --rounds 3 --concurrency 800 --level-timeout 120 --out /tmp/def800; save def800
$S --mps --rounds 3 --concurrency 800 --level-timeout 120 --out /tmp/mps800; save mps800
