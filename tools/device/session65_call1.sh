# Run 234 (session 65, call 1) = next_one_gpu.sh as of 2f98e22.
# One-GPU call (either card; ~9 minutes with the start), then next_one_gpu_2.sh right after on the same warm machine:
# the codec's `conv1_kernel` as built after run 233 (session 64): the dilated conv1s (3 and 9) and their SnakeBeta by
# kernels/vocoder_conv.py with tiles by width; dilation 1 stays cuDNN's.
# (1) bench_codec --ab conv1_kernel against the service's build, graph steps of 128 rows at 1, 2, 4 and 15 frames,
# 4 rounds alternating in one process; then its close check; (2) the one-GPU stack under MPS with
# OMNI_CODEC_CONV1_KERNEL=1 at 128 and 512 streams opened at once, 4 rounds (next_one_gpu_2.sh: the same without).
# Why: run 233 timed the 12 conv1s + SnakeBeta one by one on an H100 (the Triton GEMM 0.62-0.73x cuDNN + SnakeBeta
# at dilations 3 and 9, 0.96-1.19x at dilation 1) and the first version (all 12, one tile size a width) in the step:
# 128x15 -7.98%, 128x2 +0.22%.
# Prediction: (1) 128x15 -10 to -14% (run 233's table: 4.8 ms of the 36.8 ms step), 128x4 -7 to -11%, 128x1 and
# 128x2 -2 to -8%; the check passes. (2) with next_one_gpu_2.sh: +2 to +6% audio-s/s at 512 streams, none gapped.
# Rule: the switch goes on by default if (1) is shorter at every length with the check passed, and (2) is not lower
# at 512 streams; else it stays off with its numbers.
source tools/device/setup.sh
stamp start
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel --upsample-channels-last"
python3 tools/bench_codec.py $F --conv1-kernel --modes fused-cl+graph --batches 128 --chunks 1 2 4 15 \
    --cudnn-benchmark --min-seconds 0.3 --no-checks --ab conv1_kernel --ab-rounds 4 --out $OUT/codec_ab.json \
    > $OUT/codec_ab.txt 2>&1
grep -E '"ab"|rror|Traceback' $OUT/codec_ab.txt | cut -c1-300
stamp ab
python3 - <<'PY' 2>&1 | cut -c1-400  # bench_codec's check of the switch alone (its other flags' checks take minutes)
import functools, json, sys
sys.path.insert(0, "tools")
from bench_codec import check_close, switched_on
from omni.models.qwen3_tts.codec import CodecDecoderConfig
from omni.models.qwen3_tts.codec_graphs import fuse_channels_last
base = functools.partial(fuse_channels_last, fast_sine=True)
result = check_close(CodecDecoderConfig(), "cuda", switched_on("conv1_kernel"), base=base)
print(json.dumps({"check": "conv1_kernel_vs_separate", **result}))
PY
stamp check
OMNI_CODEC_CONV1_KERNEL=1 $S --mps --rounds 4 --concurrency 128 512 --level-timeout 150 --out /tmp/conv1; save conv1
