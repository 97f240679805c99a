# Run 234 (session 65, call 1; either card, ~9 minutes with the start): the codec's three implicit-GEMM switches in the
# graph step (kernels/vocoder_conv.py): conv1_kernel as built after run 233 (the dilated conv1s and their SnakeBeta,
# tiles by width), and the new conv2_kernel (each residual unit's 1x1 conv2, its bias, the residual add and the next
# SnakeBeta in the GEMM's epilogue) and transposed_kernel (each block's transposed conv as a 2-tap conv with r*C_out
# columns).
# (1) conv2's GEMM by tiles against cuDNN's 1x1 conv + bias_residual_cl (tools/bench_unit_tail.py --conv2), and the
#     transposed convs by tiles against cuDNN's (tools/bench_vocoder_convs.py --transposed), 128 rows x 15 frames.
#     Each width's fastest tiles go into VOCODER_TILES for (2).
# (2) bench_codec --ab conv1_kernel, conv2_kernel, transposed_kernel and the three together: graph steps of 128 rows
#     at 1, 2, 4 and 15 frames, 4 rounds alternating in one process.
# (3) bench_codec's close check for each switch and for the three.
# Why: run 227 put the convs at 62.7% of the 128x15 replay (the upsamplers' dgrad among them) and bias_residual_cl
# at 17.9% (four passes at ~87% of the bandwidth); conv2 in a GEMM whose epilogue does the add saves two of the six
# passes. Run 233: cuDNN's convs at 280-776 TFLOP/s, the Triton GEMM's speed independent of the dilation.
# Prediction: (1) the best conv2 tiles 0.80-0.95x separate; the best transposed tiles 0.7-1.1x cuDNN. (2) conv1_kernel
# 128x15 -10 to -14%, 128x4 -7 to -11%, 128x1/2 -2 to -8%; conv2_kernel 128x15 -3 to -8%, 128x1/2 -1 to -5%;
# transposed_kernel -3 to +3% everywhere; the three about the sum. (3) every check passes.
# Rule: a switch goes on by default if its side is shorter at every length in (2) and its check passes (the
# service's default then has every such switch; the joint side must be the shortest at 128x15 and 128x2). The MPS
# stack with them comes next call.
source tools/device/setup.sh
stamp start
TILES="128x128x64w4s4 128x256x64w8s3 128x128x64w8s3 64x128x64w4s4 128x128x32w4s4"
timeout 100 python3 tools/bench_unit_tail.py --conv2 --no-fused --rows 128 --frames 15 --tiles $TILES \
    --out $OUT/conv2_t15.json > $OUT/conv2_t15.txt 2>&1
grep -E "separate|conv2|rror" $OUT/conv2_t15.txt | cut -c1-200 | tail -n 30
stamp conv2 tiles
timeout 100 python3 tools/bench_vocoder_convs.py --transposed --rows 128 --frames 15 --tiles $TILES \
    --out $OUT/transposed_t15.json > $OUT/transposed_t15.txt 2>&1
grep -vE "^\s*$" $OUT/transposed_t15.txt | cut -c1-200 | tail -n 32
stamp transposed tiles
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel --upsample-channels-last"
timeout 300 python3 - $F <<PY > $OUT/codec_ab.txt 2>&1
import json, runpy, sys
from omni.kernels import vocoder_conv
from omni.kernels.tiles import Tiles
for conv, path, prefix in (("conv2", "conv2_t15", "conv2"), ("transposed", "transposed_t15", "triton")):
    best = {}  # each width's fastest tiles at 128x15
    try:
        rows = json.load(open(f"$OUT/{path}.json"))["rows"]
    except (OSError, ValueError) as exc:
        print("no tiles for", conv, repr(exc))
        continue
    for r in rows:
        if r["side"].startswith(prefix) and "ms" in r and r["ms"] < best.get(r["channels"], (None, 1e9))[1]:
            best[r["channels"]] = (r["side"].split()[1], r["ms"])
    vocoder_conv.VOCODER_TILES.update({(conv, c): Tiles.parse(t) for c, (t, _) in best.items()})
print("VOCODER_TILES", {k: str(t) for k, t in vocoder_conv.VOCODER_TILES.items()}, flush=True)
sys.argv = ["tools/bench_codec.py", *sys.argv[1:], "--modes", "fused-cl+graph", "--batches", "128",
    "--chunks", "1", "2", "4", "15", "--cudnn-benchmark", "--min-seconds", "0.3", "--no-checks", "--ab-rounds", "4",
    "--ab", "conv1_kernel,conv2_kernel,transposed_kernel,conv1_kernel+conv2_kernel+transposed_kernel",
    "--out", "$OUT/codec_ab.json"]
runpy.run_path("tools/bench_codec.py", run_name="__main__")
PY
grep -E "VOCODER_TILES|no tiles|\"ab\"|rror|Traceback" $OUT/codec_ab.txt | cut -c1-300
stamp ab
python3 - <<'PY' 2>&1 | cut -c1-400  # bench_codec's check of each switch and the three (with the default tiles)
import json, sys
sys.path.insert(0, "tools")
from bench_codec import check_close
from omni.models.qwen3_tts.codec import CodecDecoderConfig
from omni.models.qwen3_tts.codec_graphs import fuse_channels_last
def base(decoder):
    fuse_channels_last(decoder, fast_sine=True)
    decoder.residual_snake_kernel = True  # the service's default: conv2's epilogue writes the next SnakeBeta
three = ["conv1_kernel", "conv2_kernel", "transposed_kernel"]
for names in ([three[0]], [three[1]], [three[2]], three):
    def build(decoder, names=names):
        for name in names:
            setattr(decoder, name, True)
    result = check_close(CodecDecoderConfig(), "cuda", build, base=base)
    print(json.dumps({"check": "+".join(names), **result}), flush=True)
PY
stamp check
