# Session 15, call 3 (run 57): the step token budget at 1536 against today's 1024, interleaved on one machine.
# Run 55 (one machine): 1024 gave TTFA p99 244 / 243 ms at 128 streams and 1,145.9 / 1,122.9 audio-s/s at 512 (17% /
# 26% of requests with a gap, 1% / 2% with a 100 ms buffer); 1536 once gave 212 ms and 1,157.7 (24%, 3%).
# Prediction: 1536 keeps its 128-stream p99 ~30 ms under 1024's (the wave is admitted in ~3 steps, not 4) and the
# 512-stream figures move within the spread above. If it does in both of its runs here, it becomes the default.
source tools/device/setup.sh
stamp start
OMNI_TALKER_STEP_TOKEN_BUDGET=1536 $S --concurrency 128 512 --out /tmp/B15b; save B15b
$S --concurrency 128 512 --out /tmp/D3; save D3
OMNI_TALKER_STEP_TOKEN_BUDGET=1536 $S --concurrency 128 512 --out /tmp/B15c; save B15c
