# NOT RUN: four tries for it failed to start and three were refused; 242 s of device time were left, too few.
# next_one_gpu.sh's H100 card carries it (6 rounds).
# Run 229 (session 63, call 3) = the fp8 K/V cache's capacity on an H100: the one-GPU stack under MPS with
# OMNI_TALKER_KV_CACHE_DTYPE=fp8 at 1,024 streams opened at once, 3 rounds of 10 s requests (3, not the
# card's 6: five starts failed before it, and 347 s of device time were left).
# Why: run 215 could not start this stack at 1,024 streams in bf16 (the talker sized for them took 61.7 GiB, the codec
# 16.0-16.5, past the H100's 80 GB); the backbone's cache (1,024 slots x 510 positions, ~60 GB in bf16) halves in fp8.
# Prediction: the stack starts (the talker's cache ~30 GB, logged), 1,024 streams 1,480-1,620 audio-s/s (run 218 under
# MPS: 1,601.6 with 800 opened at once; the card is full from 512), at most 0.5% of requests gapped. No rule: it
# measures what the setting's help claims (more slots a GPU), and decides nothing.
source tools/device/setup.sh
stamp start
OMNI_TALKER_KV_CACHE_DTYPE=fp8 $S --mps --rounds 3 --concurrency 1024 --level-timeout 150 --out /tmp/fp8_1024; save fp8_1024
tar xzf $OUT/fp8_1024.tgz -C /tmp/x 2>/dev/null || (mkdir -p /tmp/x && tar xzf $OUT/fp8_1024.tgz -C /tmp/x)
grep -rh "K/V cache\|out of memory\|Error" /tmp/x | cut -c1-250 | head -8
nvidia-smi --query-gpu=memory.used --format=csv,noheader
