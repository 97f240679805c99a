# Session 14, call 4 (run 52, nvidia-h200, ~8 minutes): the stack at 128 and 512 streams, today's defaults (X) against
# a step token budget of 1024 with prefill graphs of up to 64 prompts (Y), one machine. Run 51 (engine alone, the
# 128-stream wave): first chunk p99 159 -> 116 ms. Prediction: TTFA p99 at 128 streams down by ~40 ms (run 49: 265);
# at 512 streams nothing moves (a step there decodes ~470 rows, so it prefills max(512, 1024 - 470) positions as now).
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 --out /tmp/X; save X
OMNI_TALKER_STEP_TOKEN_BUDGET=1024 OMNI_TALKER_PREFILL_BATCH_BUCKETS=1,2,4,8,16,32,64 $S --concurrency 128 512 \
    --out /tmp/Y; save Y
