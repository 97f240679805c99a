# Session 15, call 4 (run 58): ours and the official qwen-tts 0.1.1 side by side in one bench_stack invocation on one
# H200 (the stack at 512 streams, then the official at batch 1 and at 512, its best batch in runs 23-25: 194.8
# audio-s/s, 0.42 at batch 1). Carry .whl_codec (transformers 4.57.3, tokenizers 0.22.1, huggingface-hub 0.36.0,
# accelerate 1.12.0, qwen-tts 0.1.1) as well. Prediction: the official as before (~195 and ~0.4), ours ~1,130-1,160
# (runs 55, 57), so ~5.9x: far from the 50x row, which would need ~9,700 audio-s/s on one H200.
source tools/device/setup.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/off .whl_codec/*.whl || exit 1
stamp start
$S --concurrency 512 --official --official-pythonpath /tmp/off --official-batches 1 512 --official-max-seconds 60 \
    --out /tmp/OF; save OF
cat /tmp/OF/official-1.7b.json 2>/dev/null | head -c 3000
