# Run 242 (session 67, call 6): transposed_kernel with the GEMM on blocks 0, 2 and 3 only (codec_graphs.
# TRANSPOSED_GEMM_BLOCKS; block 1, 768 channels, stays cuDNN's: its GEMM + SnakeBeta 1.26x at 128x1 and 1.10x at
# 128x15) in the graph step at 128 rows of 1 / 2 / 4 / 15 frames, against the service's build (conv1_kernel and
# conv2_kernel on), one process, 3 rounds alternating; then bench_codec's check of it.
# Prediction (runs 234 and 239's sums of the three blocks' convs + SnakeBeta against the step): -0.5 to -2.5% at each
# length; the check passes. Rule: transposed_kernel goes on by default if shorter at every length and its check passes.
source tools/device/setup.sh
stamp start
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel --upsample-channels-last \
--conv1-kernel --conv2-kernel"
timeout 150 python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 1 2 4 15 --cudnn-benchmark \
    --min-seconds 0.3 --no-checks --ab-rounds 3 --out $OUT/codec_ab.json --ab transposed_kernel > $OUT/codec_ab.txt 2>&1
grep -E '"ab"|rror|Traceback' $OUT/codec_ab.txt | cut -c1-300
stamp ab
timeout 100 python3 - <<'PY' 2>&1 | cut -c1-400
import json, sys
sys.path.insert(0, "tools")
from bench_codec import check_close
from omni.models.qwen3_tts.codec import CodecDecoderConfig
from omni.models.qwen3_tts.codec_graphs import fuse_channels_last
def base(decoder):
    fuse_channels_last(decoder, fast_sine=True)
    decoder.residual_snake_kernel = decoder.conv1_kernel = decoder.conv2_kernel = True
def build(decoder):
    decoder.transposed_kernel = True
print(json.dumps({"check": "transposed", **check_close(CodecDecoderConfig(), "cuda", build, base=base)}), flush=True)
PY
stamp check
