# Run 234 (session 65, call 1; either card, ~8 minutes with the start): the codec's two implicit-GEMM switches in the
# graph step. conv1_kernel as built after run 233 (the dilated conv1s and their SnakeBeta; tiles by width) and the new
# conv2_kernel (each residual unit's 1x1 conv2, its bias, the residual add and the next SnakeBeta in the same GEMM's
# epilogue: kernels/vocoder_conv.vocoder_conv_residual).
# (1) tools/bench_unit_tail.py --conv2: conv2's GEMM by tiles against cuDNN's 1x1 conv + bias_residual_cl (both after
#     the unit's SnakeBeta), 128 rows of 15 and of 4 frames. Each width's fastest tiles go into CONV2_TILES for (2).
# (2) bench_codec --ab conv1_kernel,conv2_kernel,conv1_kernel+conv2_kernel: graph steps of 128 rows at 1, 2, 4 and 15
#     frames, 4 rounds alternating in one process.
# (3) bench_codec's close check for each switch and for both.
# Why: run 227 put the convs at 62.7% of the 128x15 replay and bias_residual_cl at 17.9% (four passes at ~87% of the
# bandwidth); conv2 in a GEMM whose epilogue does the add saves two of the six passes (the conv's write and the add's
# read of it). Run 108's pointer-fed unit-tail GEMM without prologue was 1.12x separate; this one is TMA-fed.
# Prediction: (1) the best conv2 tiles 0.80-0.95x separate at 128x15 and 0.85-1.0x at 128x4; (2) conv1_kernel 128x15
# -10 to -14%, 128x4 -7 to -11%, 128x1/2 -2 to -8%; conv2_kernel 128x15 -3 to -8%, 128x1/2 -1 to -5%; both: about the
# sum; (3) every check passes (bf16 as close to fp32 as the plain build).
# Rule: a switch goes on by default if its side is shorter at every length in (2) and its check passes; both on if the
# joint side is shorter than each alone at 128x15 and 128x2. The MPS stack with what is on comes next call.
source tools/device/setup.sh
stamp start
TILES="128x128x64w4s4 128x256x64w8s3 128x128x64w8s3 128x64x64w4s4 64x128x64w4s4 128x128x32w4s4 64x64x32w4s4"
for frames in 15 4; do
    python3 tools/bench_unit_tail.py --conv2 --no-fused --rows 128 --frames $frames --tiles $TILES \
        --out $OUT/conv2_t$frames.json > $OUT/conv2_t$frames.txt 2>&1
    grep -E "separate|conv2|rror" $OUT/conv2_t$frames.txt | cut -c1-200 | tail -n 45
done
stamp tiles
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel --upsample-channels-last"
python3 - $F <<PY > $OUT/codec_ab.txt 2>&1
import json, runpy, sys
from omni.kernels import vocoder_conv
from omni.kernels.tiles import Tiles
best = {}
for r in json.load(open("$OUT/conv2_t15.json"))["rows"]:  # each width's fastest conv2 tiles at 128x15
    if r["side"].startswith("conv2") and "ms" in r and r["ms"] < best.get(r["channels"], (None, 1e9))[1]:
        best[r["channels"]] = (r["side"].split()[1], r["ms"])
vocoder_conv.CONV2_TILES.update({c: Tiles.parse(t) for c, (t, _) in best.items()})
print("CONV2_TILES", {c: str(t) for c, t in vocoder_conv.CONV2_TILES.items()}, flush=True)
sys.argv = ["tools/bench_codec.py", *sys.argv[1:], "--conv1-kernel", "--conv2-kernel", "--modes", "fused-cl+graph",
    "--batches", "128", "--chunks", "1", "2", "4", "15", "--cudnn-benchmark", "--min-seconds", "0.3", "--no-checks",
    "--ab", "conv1_kernel,conv2_kernel,conv1_kernel+conv2_kernel", "--ab-rounds", "4", "--out", "$OUT/codec_ab.json"]
runpy.run_path("tools/bench_codec.py", run_name="__main__")
PY
grep -E "CONV2_TILES|\"ab\"|rror|Traceback" $OUT/codec_ab.txt | cut -c1-300
stamp ab
python3 - <<'PY' 2>&1 | cut -c1-400  # bench_codec's check of each switch and both (its other flags' take minutes)
import json, sys
sys.path.insert(0, "tools")
from bench_codec import check_close
from omni.models.qwen3_tts.codec import CodecDecoderConfig
from omni.models.qwen3_tts.codec_graphs import fuse_channels_last
def base(decoder):
    fuse_channels_last(decoder, fast_sine=True)
    decoder.residual_snake_kernel = True  # the service's default: conv2's epilogue writes the next SnakeBeta
for names in (["conv1_kernel"], ["conv2_kernel"], ["conv1_kernel", "conv2_kernel"]):
    def build(decoder, names=names):
        for name in names:
            setattr(decoder, name, True)
    result = check_close(CodecDecoderConfig(), "cuda", build, base=base)
    print(json.dumps({"check": "+".join(names), **result}), flush=True)
PY
stamp check
