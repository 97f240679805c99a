# Session 33, call 2 (run 126). One-GPU call (nvidia-h200, ~6 minutes): today's defaults in the stack (window_pair_kernel
# on since run 125) at 128, 512 and 800 streams opened at once, then the official qwen-tts 0.1.1 at batch 1 and 512
# (its best batch in runs 23-25 and 58) in the same bench_stack invocation: the side-by-side row was last measured
# with session 15's defaults (run 58: ours 1,155.4 against its 201.5 audio-s/s, 5.7x). Carry .whl_codec
# (transformers 4.57.3, tokenizers 0.22.1, huggingface-hub 0.36.0, accelerate 1.12.0, qwen-tts 0.1.1) as well.
# Prediction: 128 TTFA p99 180-240 ms; 512 1,400-1,500 audio-s/s with no gap; 800 1,350-1,500 with at most 0.5%
# gapped; GPU utilization 86-92% at 512 and 800; official ~190-210 audio-s/s at batch 512 and 0.4-0.6 at batch 1, so
# ours at 512 streams ~6.7-7.9x its best: far from the 50x row (above the H200's compute ceiling). No rule: a
# measurement of the defaults (window_pair_kernel was decided by run 125's tick A/B, one process).
source tools/device/setup.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/off \
    .whl_codec/*.whl || exit 1
stamp start
$S --concurrency 128 512 800 --level-timeout 150 --official --official-pythonpath /tmp/off \
    --official-batches 1 512 --official-max-seconds 60 --out /tmp/T; save T
cat /tmp/T/official-1.7b.json 2>/dev/null | head -c 2500
