# Session 14, call 3 (run 51, nvidia-h200, ~3 minutes): the talker engine alone on the 128-stream opening wave (as
# call 2), with prompt chunks now grouped narrowest first (plan_prefill), against a step token budget of 1024 and
# 2048 (vLLM's max_num_batched_tokens: a step prefills up to budget - decoding rows) and prefill graphs of up to 64
# prompts. Prediction: 1024 admits the wave in ~4 steps instead of 7; first chunk p99 171-187 ms (run 50) -> ~110.
source tools/device/setup.sh
stamp start
W="python3 tools/check_talker_engine.py --requests 128 --frames 30 --slots 512 --max-len 510 --prompt-lengths 13,40 \
--modes sync,sync --trace"
B64="--prefill-batch-buckets 1,2,4,8,16,32,64"
$W --out $OUT/wave_default.json 2> $OUT/wave_default.log; stamp "default done"
$W --step-token-budget 1024 --out $OUT/wave_1024.json 2> $OUT/wave_1024.log; stamp "1024 done"
$W --step-token-budget 1024 $B64 --out $OUT/wave_1024_b64.json 2> $OUT/wave_1024_b64.log; stamp "1024 b64 done"
$W --step-token-budget 2048 $B64 --out $OUT/wave_2048_b64.json 2> $OUT/wave_2048_b64.log; stamp "2048 b64 done"
