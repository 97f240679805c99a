# Session 26 call 4 (nvidia-h200, ~8 minutes), after call 3: today's default (K) and the residual SnakeBeta kernel
# (R) in the stack, K first, then R, at 512 and 800 streams, for the record: run-to-run spread of one build in the
# stack is a few percent (800 streams: 1,466.6 in runs 95 and 97, 1,338.1 in run 100), so one call holds both.
# Prediction: R 512 0-3% over K, no gap either; 800 at most 0.5% gapped either.
source tools/device/setup.sh
stamp start
$S --concurrency 512 800 --level-timeout 150 --out /tmp/K; save K
env OMNI_CODEC_RESIDUAL_SNAKE_KERNEL=1 $S --concurrency 512 800 --level-timeout 150 --out /tmp/R; save R
python3 tools/compare_runs.py K=/tmp/K R=/tmp/R
