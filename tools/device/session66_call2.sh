# Run 235 (session 66, call 2): the codec's three implicit-GEMM switches in the graph step again, after
# run 234 (an H100: conv1_kernel -3.0/-4.6/-10.7/-14.1% at 128x1/2/4/15; conv2_kernel +4.7/+2.1/+0.5/-0.3%;
# transposed_kernel +24.0/+13.9/+6.9/+1.8%), now with M tiles across batch rows where that takes fewer tiles
# (vocoder_conv.flat_tiles): at 1 frame an upsampler's 4 new samples a row filled 4 of a 128-row tile; and conv2's
# and the upsamplers' tiles by width from run 234's sweeps (VOCODER_TILES: conv2's best 0.876 of separate over the 12
# at 128x15 against 0.99 with the default tiles; the upsamplers + SnakeBeta 0.891 against 1.125).
# (1) bench_codec --ab conv1_kernel, conv2_kernel, transposed_kernel and the three together, 128 rows at 1, 2, 4, 15
#     frames, 3 rounds alternating in one process (as run 234).
# (2) bench_codec's close check of the three together.
# Prediction: conv1_kernel 128x15/4 within 1% of run 234's, 128x1/2 -4 to -8% (was -3.0/-4.6); conv2_kernel 128x15
# -2 to -5% (tiles), 128x1/2 -3 to +1% (was +4.7/+2.1); transposed_kernel 128x15 -0.5 to -2.5%, 128x1/2 -2 to +6%
# (was +24/+14).
# Rule (as run 234's): a switch goes on by default if its side is shorter at every length and its check passes.
source tools/device/setup.sh
stamp start
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel --upsample-channels-last"
timeout 240 python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 1 2 4 15 --cudnn-benchmark \
    --min-seconds 0.3 --no-checks --ab-rounds 3 --out $OUT/codec_ab.json \
    --ab conv1_kernel,conv2_kernel,transposed_kernel,conv1_kernel+conv2_kernel+transposed_kernel > $OUT/codec_ab.txt 2>&1
grep -E '"ab"|rror|Traceback' $OUT/codec_ab.txt | cut -c1-300
stamp ab
timeout 100 python3 - <<'PY' 2>&1 | cut -c1-400  # bench_codec's check of the three together
import json, sys
sys.path.insert(0, "tools")
from bench_codec import check_close
from omni.models.qwen3_tts.codec import CodecDecoderConfig
from omni.models.qwen3_tts.codec_graphs import fuse_channels_last
def base(decoder):
    fuse_channels_last(decoder, fast_sine=True)
    decoder.residual_snake_kernel = True
def build(decoder):
    for name in ("conv1_kernel", "conv2_kernel", "transposed_kernel"):
        setattr(decoder, name, True)
print(json.dumps({"check": "all three", **check_close(CodecDecoderConfig(), "cuda", build, base=base)}), flush=True)
PY
stamp check
