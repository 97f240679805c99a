# Session 14, call 6 (run 54, nvidia-h200, ~4 minutes): which half of Y (step token budget 1024, prefill graphs of
# up to 64 prompts) gave the extra gaps at 512 streams in runs 52-53 (Y 37% and 31% of requests, X 21% and 16%):
# the budget alone, with the prefill graphs of up to 16 prompts. 512 first, then 128.
source tools/device/setup.sh
stamp start
OMNI_TALKER_STEP_TOKEN_BUDGET=1024 OMNI_TALKER_PREFILL_BATCH_BUCKETS=1,2,4,8,16 $S --concurrency 512 128 --out /tmp/Z
save Z
