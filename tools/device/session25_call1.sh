# Session 25 call 1: session 24's next_one_gpu.sh, unchanged.
# Next one-GPU call (nvidia-h200, ~6 minutes): three codec-step changes, each against today's default (the fast sine
# and the K/V window kernel on), in the codec step benchmark, then one run with all checks. One process times the
# step with each change against the build without any (`bench_codec.py --ab`, 4 rounds alternating: the same cuDNN
# algorithms on every side):
# - the RVQ lookup kernel (`rvq_kernel`, built in session 24);
# - the window attention kernel (`attention_kernel`, built in session 24 after the runs);
# - the transformer through the talker's fused kernels (`transformer_kernels`, with session 24's fix for 1-frame
#   steps; unfused and fused again in place between sides).
# Why: in session 24 run 91 gave the transformer kernels 128x2 8.91 -> 8.28 ms and run 92 the RVQ kernel 8.89 ->
# 8.06, but the same build measured 8.28 and 8.89 ms in two processes (each autotunes its own cuDNN algorithms), and
# both runs' graph checks errored on the RoPE kernel's stride bug (fixed: 551ebaa). SDPA over the mask was 0.87 ms of
# the 128x2 eager step's 7.44 ms of CUDA time (run 91's profile).
# Predictions (fused-cl+graph, 128 rows, medians of 4): base 128x2 8.3-9.0 ms, 128x15 36.5-38.0; RVQ kernel 128x2
# -2-5%, 128x15 -0.5-3%; attention kernel 128x2 -3-7%, 128x15 -1-3%; transformer kernels 128x2 -4-8%, 128x15 -1-3%;
# the checks run: every check passes (window and RVQ kernels bitwise, transformer and attention kernels within their
# bounds, graph = eager bitwise at a full bucket with 1-frame steps).
# Rules, written before the run, each on the in-process medians: `rvq_kernel` turns on by default if every check of
# the checks run passes and its 128x2 step is >= 1.5% shorter than the base's; `attention_kernel` and
# `transformer_kernels` the same at >= 3%.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --fast-sine --window-kernel --modes fused-cl+graph --batches 128 --chunks 2 15 \
    --cudnn-benchmark --min-seconds 0.5 --no-checks --ab rvq_kernel,attention_kernel,transformer_kernels \
    --ab-rounds 4 --out $OUT/ab.json 2>&1 | grep -E '^\{"ab"|"error"'
stamp ab
python3 tools/bench_codec.py --fast-sine --window-kernel --transformer-kernels --rvq-kernel --attention-kernel \
    --modes fused-cl,fused-cl+graph --batches 128 --chunks 2 --cudnn-benchmark --min-seconds 0.3 \
    --out $OUT/checks.json 2>&1 | grep -E '"check"|"error"' | cut -c1-400
stamp checks
