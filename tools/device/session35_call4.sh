# Session 35 call 4 (run 135, nvidia-h200, ~5 minutes on a warm machine): the stack with today's defaults
# (upsample_channels_last on since run 132) at 512 and 1,024 streams opened at once: what is left of the budget.
# Prediction (run 129, session 34's defaults: 1,425.1 / 1,523.2): 512 1,320-1,520 audio-s/s, no gap; 1,024
# 1,350-1,600, at most 0.5% gapped; utilization 84-92%. One machine: the change (ticks -1 to -2%) is within the spread.
# No rule: a measurement.
source tools/device/setup.sh
stamp start
$S --concurrency 512 1024 --level-timeout 150 --out $OUT/T 2>&1 | grep -v "it/s\]$" | tail -30
cat $OUT/T/table.md
stamp stack
