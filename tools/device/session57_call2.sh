# Run 200 (session 57, call 2): DESIGN §8's side-by-side row on one H100, in one bench_stack invocation (~5 minutes):
# the one-GPU stack with today's defaults at 128 and 512 streams opened at once, then the official qwen-tts 0.1.1 at
# batch 1 and 256 (its best batch on an H100, run 197: 109.11 audio-s/s; 384 and 512 run out of its 80 GB) on the same
# checkpoint, length and GPU. Session 56 had the H100 ratio only from two runs on two machines (13.0x: run 192's
# 1,413.3 at 512 streams against run 197's 109.11). On an H200 it would be run 126's call again (batch 512 fits there).
# Carry .whl, .whl_stack and .whl_codec.
# Prediction: 512 streams 1,400-1,500 audio-s/s (run 192: 1,413.3 with session 54's defaults; sessions 55-56's step
# changes took 1-1.5% off the 512-row step, and the talker is about half the GPU there), TTFA p99 at 128 streams
# 180-280 ms, no gap; the official 95-115 audio-s/s at batch 256 and 0.38-0.45 at batch 1; the ratio 12-15x. No rule:
# it decides nothing.
source tools/device/setup.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/off \
    .whl_codec/*.whl || exit 1
stamp start
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then BATCHES="1 256"; else BATCHES="1 512"; fi
$S --concurrency 128 512 --level-timeout 150 --official --official-pythonpath /tmp/off \
    --official-batches $BATCHES --official-max-seconds 60 --out /tmp/T; save T
python3 -c "import json; d = json.load(open('/tmp/T/results.json')); print(json.dumps(d.get('official'), indent=1))" \
    2>&1 | head -40
