# Run 220 (session 61, call 2) = the 0.6B in the one-GPU stack, under MPS (`--mps`, the README's one-GPU layout) and
# without, 16 / 128 / 512 streams opened at once, 6 rounds; one machine, the default stack first.
# Why: runs 214-219 measured MPS on the 1.7B only; the README names `omni serve --mps` for one GPU whatever the model,
# and the 0.6B's step is shorter, so the codec is a larger share of the GPU's work.
# Prediction (an H100): MPS against default +15 to +35% at 16 streams, +5 to +20% at 128 and 512; none gapped in either.
# Rule: if MPS is below 97% of the default at any level, or its TTFA p99 at 128 streams above 120% of the default's,
# the README's one-GPU advice names the 1.7B only.
source tools/device/setup.sh
stamp start
S06=${S/--models 1.7b/--models 0.6b}
$S06 --concurrency 16 128 512 --level-timeout 150 --out /tmp/def06; save def06
$S06 --mps --concurrency 16 128 512 --level-timeout 150 --out /tmp/mps06; save mps06
