# Run 241 (session 67, call 5): DESIGN §8's side-by-side row on an H100 with today's defaults, in one bench_stack
# invocation (~6 minutes): the one-GPU stack under MPS (`omni serve --mps`, the one-GPU advice since session 60) at 512
# streams opened at once, then the official qwen-tts 0.1.1 at batch 1 and 256 (its best batch on an H100, run 197;
# 384 and 512 run out of its 80 GB) on the same checkpoint, length and GPU. Run 200 (session 56's defaults, no MPS):
# ours 1,314.7 against its 74.21, 17.7x. Carry .whl, .whl_stack and .whl_codec.
# Prediction: ours 1,560-1,680 audio-s/s (run 240: 1,606.6), none gapped; the official 70-115 audio-s/s at batch 256
# and 0.28-0.45 at batch 1; the ratio 14-23x. No rule: it decides nothing (the 50x row is above the compute ceiling).
source tools/device/setup.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/off \
    .whl_codec/*.whl || exit 1
stamp start
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then BATCHES="1 256"; else BATCHES="1 512"; fi
$S --mps --concurrency 512 --level-timeout 150 --official --official-pythonpath /tmp/off \
    --official-batches $BATCHES --official-max-seconds 60 --out /tmp/T; save T
python3 -c "import json; d = json.load(open('/tmp/T/results.json')); print(json.dumps(d.get('official'), indent=1))" \
    2>&1 | head -40
