# Run 190 (session 53, call 1). One-GPU call on an H100 (`nvidia-h100-x1`, ~6 minutes): today's defaults in the stack at
# 1, 128, 512 and 800 streams opened at once, with each level's GPU utilization: DESIGN §8's one-GPU rows in H100 terms,
# for operators whose nodes carry H100s (every stack figure of the record above 32 streams is an H200's; run 186 gave the
# H100's 1 / 16 / 32 streams: 17.5 / 191.6 / 316.8 audio-s/s, TTFA p50 24 / 42 / 67 ms).
# Prediction (the H100 has ~70% of the H200's memory bandwidth and about its bf16 compute; the 512-row talker step and
# the codec's convs are partly compute-bound): 512 streams 1,100-1,400 audio-s/s (run 157 on an H200: 1,392.2); TTFA p50
# at 1 stream 22-30 ms; TTFA p99 at 128 streams 180-280 ms; 800 streams some requests gapped (H200 run 157: none).
# No rule: it decides nothing.
source tools/device/setup.sh
stamp start
$S --concurrency 1 128 512 800 --level-timeout 150 --out /tmp/T; save T
