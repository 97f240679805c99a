# Session 15, call 1 (run 55): next_one_gpu.sh as written in session 14.
# Next one-GPU call (nvidia-h200, ~8 minutes): more samples of session 14's default (step token budget 1024), which
# met TTFA p99 <= 250 ms at 128 streams once (run 54: 249 ms; 220 and 250 with prefill graphs of up to 64 prompts,
# runs 52-53; 319 and 261 without the budget), and of its cost at 512 streams (run 54: 18% of requests with a gap,
# 2% with a 100 ms buffer; 16-21% and 0% without). Two stacks of the default at 128 and 512, then a budget of 1536
# (a full talker at 512 streams gets ~1,060 positions a step instead of ~550: does the gap rate move?).
# Then tools/device/next_one_gpu_2.sh (the open loop).
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 --out /tmp/D1; save D1
$S --concurrency 128 512 --out /tmp/D2; save D2
OMNI_TALKER_STEP_TOKEN_BUDGET=1536 $S --concurrency 128 512 --out /tmp/B15; save B15
