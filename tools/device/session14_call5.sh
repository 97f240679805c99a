# Session 14, call 5 (run 53, nvidia-h200, ~7 minutes; the machine of run 52, still warm): run 52's A/B again in
# the other order, settings spelled out (Y: step token budget 1024 with prefill graphs of up to 64 prompts; X: the
# defaults before it), then Y in the open loop at 96 requests/s (run 49 with X: 1,086 listening, 1% of requests with a gap).
source tools/device/setup.sh
stamp start
Y="OMNI_TALKER_STEP_TOKEN_BUDGET=1024 OMNI_TALKER_PREFILL_BATCH_BUCKETS=1,2,4,8,16,32,64"
X="OMNI_TALKER_STEP_TOKEN_BUDGET=0 OMNI_TALKER_PREFILL_BATCH_BUCKETS=1,2,4,8,16"
env $Y $S --concurrency 128 512 --out /tmp/Y2; save Y2
env $X $S --concurrency 128 512 --out /tmp/X2; save X2
env $Y $S --concurrency 800 --arrival-seconds 25 --rates 96 --out /tmp/YO; save YO
