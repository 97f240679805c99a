# Run 156 (session 39, call 5): today's defaults (skinny_linear and fused_draws on since runs 154-155) in the stack at
# 1 and 512 streams, with each level's GPU utilization.
# Why: the first stack with both settings on; 1 stream for the time to first audio (the 1-row step 5.28 -> 3.7 ms),
# 512 against run 142 (1,523.4 audio-s/s, none gapped; the 512-row step -1.4% with fused_draws, skinny_linear not
# used above 4 rows).
# Prediction: 1 stream TTFA p50 20-30 ms (run 103: 28 ms); 512 streams 1,480-1,600 audio-s/s with no gap (the stack's
# spread between machines is 3-10%).
source tools/device/setup.sh
stamp start
$S --concurrency 1 512 --level-timeout 110 --out /tmp/T; save T
