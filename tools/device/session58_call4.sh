# Run 208 (session 58, call 4): the one-GPU stack served in fp32 (talker, codec and reference encoder with
# --dtype float32, today's defaults), 1.7B, at 1 and 32 streams (~5 minutes).
# Why: run 206 found the skinny dot kernel's 64 x 256 launch at 17-32 rows asking more shared memory in fp32 than an
# H100 has; the talker captures a graph for every bucket when it starts, so a talker served in fp32 on a GPU with the
# default settings could not start. launch_fitting (run 207: the fp32 bench's checks all equal) takes a stage off.
# Prediction: the stack starts and serves both levels with no failures (fp32 throughput well under bf16's: run 207's
# fp32 32-row step was 39.6 ms against ~5 ms in bf16).
source tools/device/setup.sh
stamp start
$S --dtype float32 --rounds 2 --concurrency 1 32 --out /tmp/stack_fp32; save stack_fp32
