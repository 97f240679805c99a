# Next one-GPU call (after session 65: its run 234 got no machine; either card, ~8 minutes with the start): the
# codec's three implicit-GEMM switches in the
# graph step (kernels/vocoder_conv.py): conv1_kernel as built after run 233 (the dilated conv1s and their SnakeBeta,
# tiles by width), and the new conv2_kernel (each residual unit's 1x1 conv2, its bias, the residual add and the next
# SnakeBeta in the GEMM's epilogue) and transposed_kernel (each block's transposed conv as a 2-tap conv with r*C_out
# columns, its epilogue also writing the first residual unit's SnakeBeta: session 66).
# (1) bench_codec --ab conv1_kernel, conv2_kernel, transposed_kernel and the three together, as they would ship
#     (conv2 and transposed with tiles_for's tiles): graph steps of 128 rows at 1, 2, 4 and 15 frames, 3 rounds
#     alternating in one process.
# (2) conv2's GEMM by tiles against cuDNN's 1x1 conv + bias_residual_cl (tools/bench_unit_tail.py --conv2), and the
#     transposed convs by tiles against cuDNN's, alone and with the first SnakeBeta (tools/bench_vocoder_convs.py
#     --transposed), 128 rows x 15 frames.
# (3) bench_codec's close check for the three together, then each alone.
# (The parts in this order, each under a timeout, so a short device budget still returns the A/B.)
# Why: run 227 put the convs at 62.7% of the 128x15 replay (the upsamplers' dgrad among them) and bias_residual_cl
# at 17.9% (four passes at ~87% of the bandwidth); conv2 in a GEMM whose epilogue does the add saves two of the six
# passes. Run 233: cuDNN's convs at 280-776 TFLOP/s, the Triton GEMM's speed independent of the dilation.
# Prediction: (2) the best conv2 tiles 0.80-0.95x separate; the best transposed tiles 0.7-1.1x cuDNN. (1) conv1_kernel
# 128x15 -10 to -14%, 128x4 -7 to -11%, 128x1/2 -2 to -8%; conv2_kernel 128x15 -3 to -8%, 128x1/2 -1 to -5%;
# transposed_kernel (with the first SnakeBeta: ~0.5 ms of bytes at 128x15) -4.5 to +1.5% everywhere; the three about
# the sum. (3) every check passes.
# Rule: a switch goes on by default if its side is shorter at every length in (1) and its check passes (the
# service's default then has every such switch; the joint side must be the shortest at 128x15 and 128x2). The MPS
# stack with them comes next call.
source tools/device/setup.sh
stamp start
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel --upsample-channels-last"
timeout 300 python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 1 2 4 15 --cudnn-benchmark \
    --min-seconds 0.3 --no-checks --ab-rounds 3 --out $OUT/codec_ab.json \
    --ab conv1_kernel,conv2_kernel,transposed_kernel,conv1_kernel+conv2_kernel+transposed_kernel > $OUT/codec_ab.txt 2>&1
grep -E '"ab"|rror|Traceback' $OUT/codec_ab.txt | cut -c1-300
stamp ab
TILES="128x128x64w4s4 128x256x64w8s3 128x128x64w8s3 64x128x64w4s4 128x128x32w4s4"
timeout 80 python3 tools/bench_unit_tail.py --conv2 --no-fused --rows 128 --frames 15 --tiles $TILES \
    --out $OUT/conv2_t15.json > $OUT/conv2_t15.txt 2>&1
grep -E "separate|conv2|rror" $OUT/conv2_t15.txt | cut -c1-200 | tail -n 30
stamp conv2 tiles
timeout 120 python3 tools/bench_vocoder_convs.py --transposed --rows 128 --frames 15 --tiles $TILES \
    --out $OUT/transposed_t15.json > $OUT/transposed_t15.txt 2>&1
grep -vE "^\s*$" $OUT/transposed_t15.txt | cut -c1-200 | tail -n 60
stamp transposed tiles
python3 - <<'PY' 2>&1 | cut -c1-400  # bench_codec's check of the three together, then each alone
import json, sys
sys.path.insert(0, "tools")
from bench_codec import check_close
from omni.models.qwen3_tts.codec import CodecDecoderConfig
from omni.models.qwen3_tts.codec_graphs import fuse_channels_last
def base(decoder):
    fuse_channels_last(decoder, fast_sine=True)
    decoder.residual_snake_kernel = True  # the service's default: conv2's epilogue writes the next SnakeBeta
three = ["conv1_kernel", "conv2_kernel", "transposed_kernel"]
for names in (three, [three[1]], [three[2]], [three[0]]):
    def build(decoder, names=names):
        for name in names:
            setattr(decoder, name, True)
    result = check_close(CodecDecoderConfig(), "cuda", build, base=base)
    print(json.dumps({"check": "+".join(names), **result}), flush=True)
PY
stamp check
