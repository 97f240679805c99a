# Run 244 (session 69, call 2) = next_one_gpu_2.sh as written in session 67 (codec 128x4 replay build vs transposed kernel; conv1 tilings at 128x15; transposed check)
# Second in line (after session 67; either card, ~9 minutes with the start): why the upsamplers' GEMM saves time
# alone (run 239: with the first SnakeBeta 0.85x cuDNN + snakebeta_cl at 64x4, block 0 0.66x) but not in the codec's
# graph step (run 242: -0.6 / +0.4 / +0.2 / -0.3% at 128 rows of 1 / 2 / 4 / 15 frames). The codec's 128x4 graph
# replay by kernel, the service's build (run 238 on an H100: 8.66 ms, cuDNN's transposed convs 860.9 us in 6
# launches, SnakeBeta 560.1 us in 9) against the same with OMNI_CODEC_TRANSPOSED_KERNEL=1 (blocks 0, 2 and 3 through
# the GEMM with the first SnakeBeta), one after the other.
# Prediction: with it, 3 cuDNN transposed launches and 3 SnakeBeta launches fewer and 3 GEMM launches more; the
# transposed convs + SnakeBeta of those three blocks ~0.15 ms shorter by kernel (64x4's saving twice), the replay
# within +-1% of the build's if the rest of the kernels lengthen by about that (what run 242 suggests). No rule: it
# says where the saving goes.
# Then the conv1s at 128x15 with both tilings (bench_vocoder_convs --both-tilings, the 768- and 384-channel blocks'
# tiles): flat_tiles picks the flat tiling for two dilated conv1s there (dilation 3 in those blocks: 498 tiles against
# 512, 2,418 against 2,432), where run 235's conv1_kernel missed its 128x15 prediction (-11.39% against -14.10).
# Prediction: flat within +-3% of rows on both. Rule: if rows is faster by >= 2% on both, flat_tiles gets a margin
# (flat only where it takes >= 3% fewer tiles, which sends both back within rows).
# Last, bench_codec's check of transposed_kernel (blocks 0, 2, 3) over the service's build, with 240 s: runs 235 and
# 242 gave it 100 s and it printed nothing (four released-size decoders, fp32 and bf16, each GEMM shape compiling on
# first use). Prediction: passes, fp32 within 1e-5 of the build, bf16 within 1.5x the build's own error.
source tools/device/setup.sh
stamp start
for side in build transposed; do
    if [ $side = transposed ]; then export OMNI_CODEC_TRANSPOSED_KERNEL=1; fi
    python3 tools/bench_codec_ticks.py --kernels 128x4 --rows 128 --ticks 1 --iters 3 --side-buckets 1 \
        --out $OUT/ticks_$side.json > $OUT/ticks_$side.txt 2>&1
    grep -E "Traceback|rror|^\||replay:" $OUT/ticks_$side.txt | cut -c1-200 | head -24
    stamp $side
done
unset OMNI_CODEC_TRANSPOSED_KERNEL
timeout 150 python3 tools/bench_vocoder_convs.py --rows 128 --frames 15 --tiles 128x256x64w8s3 128x128x64w8s3 \
    --both-tilings --out $OUT/tilings_128x15.json > $OUT/tilings_128x15.txt 2>&1
grep -E "^ +(768|384) .* 3 triton|rror|Traceback" $OUT/tilings_128x15.txt | grep -E "snake|rror|Traceback" | cut -c1-200
stamp tilings
timeout 240 python3 - <<'PY' 2>&1 | cut -c1-400
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
