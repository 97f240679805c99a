# One-GPU call on an H100 (`nvidia-h100-x1`, ~6 minutes; written for session 53, whose calls got no machine): run
# 126's call on today's defaults. The stack at 128, 512 and 800 streams opened at once, then the official qwen-tts 0.1.1
# at batch 1 and 512 (its best batch in runs 23-25, 58 and 126) in the same bench_stack invocation: DESIGN §8's one-GPU
# rows in H100 terms, for operators whose nodes carry H100s. Every stack figure of the record above 32 streams is an
# H200's; run 186 gave the H100's 1 / 16 / 32 streams (17.5 / 191.6 / 316.8 audio-s/s, TTFA p50 24 / 42 / 67 ms).
# Carry .whl, .whl_stack and .whl_codec (fetch_wheels.sh fills all three; .whl_codec holds the official's pins).
# Prediction (the H100 has ~70% of the H200's memory bandwidth and about its bf16 compute; the 512-row talker step and
# the codec's convs are partly compute-bound): 512 streams 1,100-1,400 audio-s/s (run 157 on an H200: 1,392.2); TTFA
# p99 at 128 streams 180-280 ms; at 800 some requests gapped (H200 run 157: none); the official 130-200 audio-s/s at
# batch 512, so ours ~6-10x its best. No rule: it decides nothing.
source tools/device/setup.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/off \
    .whl_codec/*.whl || exit 1
stamp start
$S --concurrency 128 512 800 --level-timeout 150 --official --official-pythonpath /tmp/off \
    --official-batches 1 512 --official-max-seconds 60 --out /tmp/T; save T
cat /tmp/T/official-1.7b.json 2>/dev/null | head -c 2500
