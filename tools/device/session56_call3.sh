# Run 197 (session 56, call 3) = next_one_gpu_h100.sh as written.
# One-GPU call on an H100 (`nvidia-h100-x1`, ~2 minutes; written in session 54 as its call 4, which got no machine):
# the official qwen-tts 0.1.1 at batch 256 then 384 on the 1.7B,
# because run 192's batch 512 ran out of the H100's 80 GB (it fit the H200's 141 GB in runs 25, 58 and 126), so its
# best batch on an H100 was not measured. Prediction (its wall time ~25 s a batch at every size on an H200, runs
# 23-25; the H100 ran its batch 1 at 0.42 audio-s/s in run 192): 256 -> 80-110 audio-s/s; 384 -> 110-160 or out of
# memory. No rule: it gives the denominator of the H100 ratio.
source tools/device/setup.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/off \
    .whl_codec/*.whl || exit 1
stamp start
# bench_stack's checkpoint: same seed, dtype and device
python3 -c "from omni.models.qwen3_tts.tiny import write_shaped_checkpoint as w; w('/tmp/ck17', 'custom_voice', \
'1.7b', device='cuda')" || exit 1
stamp checkpoint
PYTHONPATH=/tmp/off python3 tools/bench_official.py --model /tmp/ck17 --device cuda --frames 125 --batches 256 384 \
    --max-seconds 100 --out $OUT/official_h100.json 2>&1 | grep -vE "Warning|warn" | tail -12
stamp official
