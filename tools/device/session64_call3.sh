# Run 233 (session 64, call 3) = the vocoder's 12 residual k=7 convs one by one (tools/bench_vocoder_convs.py): cuDNN as
# ChannelsLastVocoder calls it ([B, C, 1, T] channels-last), cuDNN in the other orientation ([B, C, T, 1]), and
# kernels/vocoder_conv.py (new: a Triton implicit GEMM with tensor-descriptor loads, one flat K loop over taps x
# channel blocks) by tile size; and conv1 + the SnakeBeta after it (cuDNN + snakebeta_cl against the Triton conv with
# bias + SnakeBeta in its epilogue), at 128x15 and 128x4. Then the codec's new `conv1_kernel` switch (that fused conv
# in the decoder, tiles_for's default tiles) against the service's build in the graph step, one process, 4 rounds
# alternating (bench_codec --ab), with its close check.
# Why: run 227's 128x15 replay spent 62.7% in convs at ~43% of the dense bf16 peak, several of them sm80 kernels, and
# 12 of its 17 SnakeBeta launches (~3 of 4.19 ms) follow a conv1.
# Prediction: cudnn's 12 convs 15-19 ms at 128x15 (6.75 TFLOP at ~400 TFLOP/s); cudnn-t within 3% of cudnn overall;
# the best Triton tiles per conv 0.8-1.2x cudnn; with SnakeBeta, the best tiles 0.75-1.1x cudnn+snake; every relative
# difference < 1e-2 (bf16 rounding of the outputs). The switch: 128x15 -8% to +10%, 128x2 -5% to +10%; its check
# passes.
# Rule: conv1_kernel is considered for the default only if the check passes and, at 128x15, the graph step is >= 4%
# shorter and at 128x2 not longer (then tiles by width from the table, and the stack next); the other orientation is
# adopted only if >= 5% under cudnn at both lengths.
source tools/device/setup.sh
stamp start
T="128x128x32w4s4 128x128x64w8s3 128x64x64w4s4 128x256x64w8s3 128x32x32w4s4"
convs() {
    python3 tools/bench_vocoder_convs.py --rows 128 --frames $1 --tiles $T --out $OUT/convs_128x$1.json \
        > $OUT/convs_128x$1.txt 2>&1
    grep -E "Traceback|rror" $OUT/convs_128x$1.txt | cut -c1-200 | head -5
    sed -n '/summed/,$p' $OUT/convs_128x$1.txt
    stamp frames$1
}
convs 15
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel --upsample-channels-last"
python3 tools/bench_codec.py $F --conv1-kernel --modes fused-cl+graph --batches 128 --chunks 2 15 --cudnn-benchmark \
    --min-seconds 0.3 --no-checks --ab conv1_kernel --ab-rounds 4 --out $OUT/codec_ab.json > $OUT/codec_ab.txt 2>&1
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
convs 4
